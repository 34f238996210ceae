package prom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// ChannelStats tells what a dispatcher did with each channel's messages
// (notify.Dispatcher).
type ChannelStats interface {
	ChannelStats(ch quan.NotifyType) quan.DispatchStats
}

// Notifications collects a dispatcher's counts by channel, and the email
// and SMS messages waiting in the store (read at each scrape, the same
// for every process on one store: aggregate them with max, not sum). now
// is the clock the store is asked at (nil: time.Now).
func Notifications(d ChannelStats, st quan.NotificationStore, now quan.Clock) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	return notifyCollector{d: d, st: st, now: now}
}

var (
	notificationsDesc = prometheus.NewDesc("quan_notifications_total",
		"Email and SMS messages this process's dispatcher handled, by channel and result: sent (the provider accepted it), retried (deferred after the provider asked to retry), failed (refused for good, or out of tries), opted_out (the user opted out before it was sent), quiet_hours (held back until the quiet hours end; not a try).",
		[]string{"channel", "result"}, nil)
	notificationDupesDesc = prometheus.NewDesc("quan_notification_possible_duplicates_total",
		"Messages this process sent again, with the same message id, after a dispatcher took them and never recorded what became of them (it died or lost its lease): the provider may have had them already.",
		[]string{"channel"}, nil)
	notificationsQueuedDesc = prometheus.NewDesc("quan_notifications_queued",
		"Email and SMS messages waiting to be sent: queued or deferred and due, or held by a dispatcher; not those waiting for a backoff or the end of quiet hours (read from the store at each scrape; the same for every process on one store).",
		[]string{"channel"}, nil)
)

// notifyChannels are the channels the metrics always show, 0 or not.
var notifyChannels = []quan.NotifyType{quan.NotifyEmail, quan.NotifySMS}

type notifyCollector struct {
	d   ChannelStats
	st  quan.NotificationStore
	now quan.Clock
}

func (notifyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- notificationsDesc
	ch <- notificationDupesDesc
	ch <- notificationsQueuedDesc
}

// Collect leaves out the queued gauge when the store does not answer in
// time.
func (k notifyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range notifyChannels {
		s, name := k.d.ChannelStats(c), string(c)
		counter(ch, notificationsDesc, s.Sent, name, "sent")
		counter(ch, notificationsDesc, s.Retried, name, "retried")
		counter(ch, notificationsDesc, s.Failed, name, "failed")
		counter(ch, notificationsDesc, s.OptedOut, name, "opted_out")
		counter(ch, notificationsDesc, s.Quiet, name, "quiet_hours")
		counter(ch, notificationDupesDesc, s.PossibleDuplicates, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if pending, err := k.st.PendingNotifications(ctx, k.now()); err == nil {
		for _, c := range notifyChannels {
			gauge(ch, notificationsQueuedDesc, float64(pending[c]), string(c))
		}
	}
}
