// Package sms sends quan's notifications by SMS through an HTTP gateway
// that speaks quan's gateway protocol, below. It implements quan.Sender.
//
// # quan's SMS gateway protocol (v1)
//
// quan POSTs batches of messages to the configured URL (--sms-url, e.g.
// https://gw.example.com/send), at most Config.MaxBatch (500) messages a
// request and Config.Parallel (4) requests at a time:
//
//	POST /send HTTP/1.1
//	Content-Type: application/json
//	X-Quan-Timestamp: 1767196800
//	X-Quan-Signature: v1=5d41402abc4b2a76b9719d911017c592...
//	Idempotency-Key: b-3f0a...            (see below)
//
//	{"messages": [
//	  {"id": "t42-u1001-sms", "phone": "+8613812345678", "template": "SMS_123456",
//	   "kind": "issued", "lang": "zh",
//	   "params": {"name": "新人券", "offer": "满100减20元", "amount": "20", "threshold": "100",
//	              "until": "12-31 23:59", "link": "https://q.cn/Ab3dE9"},
//	   "text": "您获得「新人券」：满100减20元，12-31 23:59前有效 https://q.cn/Ab3dE9"}
//	]}
//
// Fields: id is the message's stable id — every retry of the message
// carries the same one, so the gateway must de-duplicate on it (keep the
// ids it accepted for a day or more and answer "sent" to a repeat without
// sending again). phone is E.164. template is the provider's template code
// for the kind and language (Config.Templates); params fill it; text is
// the same message rendered by quan, for gateways that send free text. It
// always fits one segment with the provider's sign.
//
// Signature: X-Quan-Signature is "v1=" and the lower-case hex
// HMAC-SHA256, keyed with the shared secret, of the X-Quan-Timestamp
// value, a '.', and the raw body bytes. A gateway recomputes it, compares
// in constant time, and refuses a timestamp more than 5 minutes from its
// clock (replays). Idempotency-Key is the message id for a one-message
// request, and for a batch "b-" and a hash of its ids — stable when the
// same batch is retried — for gateways with a generic idempotency layer;
// per-message de-duplication by id is still required, as a retried batch
// may hold other messages.
//
// Answers:
//
//	200 {"results": [{"id": "t42-u1001-sms", "status": "sent"},
//	                 {"id": "t42-u1002-sms", "status": "failed", "reason": "isv.MOBILE_NUMBER_ILLEGAL"},
//	                 {"id": "t42-u1003-sms", "status": "retry", "reason": "provider busy", "retryAfter": 30}]}
//
// Each message's status is sent (the provider accepted it), failed (the
// provider refused it for good: reason says why) or retry (try again,
// after retryAfter seconds if given). A message missing from the results
// is retried. For the request as a whole: 429 and 5xx mean retry every
// message, after the Retry-After header (seconds or an HTTP date) if
// present; 401 and 403 mean the signature or secret is wrong, which quan
// retries after a minute rather than failing messages that are fine;
// every other 4xx fails every message for good, with the body's first
// 200 bytes as the reason. A request that takes longer than Config.Timeout
// (10 s), and any connection error, is retried: the gateway may have
// accepted it, which is what the id is for.
//
// # Pointing it at Aliyun or Tencent Cloud SMS
//
// The Chinese providers' HTTP APIs each sign requests their own way
// (Aliyun: its RPC signature v3 with an AccessKey; Tencent Cloud: TC3-
// HMAC-SHA256 with a SecretId/SecretKey), send only pre-approved templates
// under a registered sign (签名), and do not de-duplicate by a caller's id.
// So quan does not speak them itself: run a small relay next to quan that
// speaks this protocol on one side and the provider's SDK on the other —
// a hundred lines in any language with the provider's official SDK:
//
//  1. Verify X-Quan-Signature and the timestamp; answer 401 if wrong.
//  2. For each message, look its id up in a store that expires keys after a
//     day (Redis SET NX EX); a repeat answers "sent" without sending.
//  3. Map template and params to the provider's call:
//     Aliyun SendSms (dysmsapi 2017-05-25): PhoneNumbers = phone without
//     "+86" for mainland numbers, SignName = your approved sign,
//     TemplateCode = template (SMS_xxxxxxxx), TemplateParam = params as a
//     JSON object (its variables named as in your template: name, offer,
//     until, link), OutId = id (shows in delivery receipts).
//     Aliyun SendBatchSms takes up to 100 numbers, with a sign and params
//     per number. Tencent Cloud SendSms (sms 2021-01-11): PhoneNumberSet =
//     up to 200 E.164 phones, SmsSdkAppId, SignName, TemplateId = template,
//     TemplateParamSet = the params in the template's {1},{2}… order (fix
//     the order in the relay), SessionContext = id.
//  4. Map the provider's per-number answer to status: success (Aliyun
//     Code "OK", Tencent SendStatus Code "Ok") is sent; the API's own
//     request throttling and internal errors (Aliyun Throttling.*;
//     Tencent RequestLimitExceeded, InternalError.*) are retry, with a
//     retryAfter where known; an invalid number, a blacklisted one, a
//     per-number frequency limit or a template mismatch (Aliyun
//     isv.MOBILE_NUMBER_ILLEGAL, isv.BLACK_KEY_CONTROL_LIMIT,
//     isv.BUSINESS_LIMIT_CONTROL; Tencent InvalidParameterValue.*,
//     FailedOperation.PhoneNumberInBlacklist, LimitExceeded.PhoneNumber*)
//     is failed with the provider's code as the reason. Check the codes
//     against the provider's current error list.
//  5. Mark the ids sent in the store only after the provider accepted
//     them, and answer 5xx if the provider could not be reached at all.
//
// The providers limit each number's messages per minute, hour and day
// (frequency controls set in their consoles, with low defaults); quan's
// per-channel rate limit applies to the whole channel, so set the
// provider's per-number limits to what a user may legitimately get, and
// map their "limit reached" codes to failed, not retry.
//
// Keep the texts within the provider's rules: marketing templates need the
// opt-out words the provider demands (拒收请回复R) in the approved
// template itself, and the sign counts toward the 70 characters of a
// segment (quan.Texts.SMSSign).
package sms
