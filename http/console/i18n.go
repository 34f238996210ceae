package console

import "fmt"

// The console speaks Chinese unless the operator switches to English.
const defaultLang = "zh"

// languages are the console's languages, by code, each with its own name.
var languages = map[string]string{"zh": "中文", "en": "English"}

// translate returns the message of key in lang, formatted with args. A
// key without a message shows as itself, which the tests catch.
func translate(lang, key string, args ...any) string {
	m, ok := messages[key]
	if !ok {
		return key
	}
	s := m.zh
	if lang == "en" {
		s = m.en
	}
	if len(args) > 0 {
		return fmt.Sprintf(s, args...)
	}
	return s
}

type message struct{ zh, en string }

// messages are the console's words, by key, joined from each part's:
// TestTemplatesUseKnownMessages checks that each key a page uses has one.
var messages = joinMessages(coreMessages, taskMessages, statsMessages, accountMessages, keyMessages)

func joinMessages(parts ...map[string]message) map[string]message {
	all := map[string]message{}
	for _, p := range parts {
		for k, m := range p {
			if _, dup := all[k]; dup {
				panic("console: message " + k + " defined twice")
			}
			all[k] = m
		}
	}
	return all
}

// coreMessages are the words of the layout, sign-in and template pages.
var coreMessages = map[string]message{
	"app.name":       {"券 · 运营后台", "quan · console"},
	"nav.templates":  {"券模板", "Templates"},
	"nav.tasks":      {"批量发券", "Distribution"},
	"nav.stats":      {"统计", "Statistics"},
	"nav.accounts":   {"账号", "Accounts"},
	"nav.keys":       {"服务密钥", "Service keys"},
	"nav.logout":     {"退出登录", "Sign out"},
	"nav.lang":       {"English", "中文"},
	"nav.skip":       {"跳到正文", "Skip to content"},
	"nav.shop":       {"店铺 %d", "Shop %d"},
	"nav.admin":      {"平台管理员", "Platform admin"},
	"nav.zone":       {"时区", "Time zone"},
	"login.title":    {"登录", "Sign in"},
	"login.name":     {"账号", "Account"},
	"login.password": {"密码", "Password"},
	"login.submit":   {"登录", "Sign in"},
	"login.wrong":    {"账号或密码错误。", "Wrong account or password."},
	"login.locked":   {"登录失败次数过多，已暂时锁定，请约 %d 分钟后再试。", "Too many failed sign-ins: locked for now, try again in about %d minutes."},
	"login.slowed":   {"账号或密码错误。此地址登录失败次数过多，请 %d 秒后再试。", "Wrong account or password. Too many failed sign-ins from this address: try again in %d seconds."},
	"login.expired":  {"登录表单已过期，请重试。", "The sign-in form expired; please try again."},
	"error.title":    {"出错了", "Something went wrong"},
	"error.back":     {"返回", "Back"},
	"error.internal": {"服务器内部错误，已记录。", "An internal error; it has been logged."},
	"common.save":    {"保存", "Save"},
	"common.cancel":  {"取消", "Cancel"},
	"common.search":  {"搜索", "Search"},
	"common.all":     {"全部", "All"},
	"common.prev":    {"上一页", "Previous"},
	"common.next":    {"下一页", "Next"},
	"common.page":    {"第 %d / %d 页，共 %d 条", "Page %d of %d, %d in all"},
	"common.none":    {"没有记录。", "Nothing here."},
	"common.yuan":    {"元", "yuan"},
	"common.actions": {"操作", "Actions"},
	"common.id":      {"编号", "ID"},
	"common.shop":    {"店铺", "Shop"},
	"common.status":  {"状态", "Status"},
	"common.created": {"创建时间", "Created"},
	"common.name":    {"名称", "Name"},
	"common.saved":   {"已保存。", "Saved."},
	"common.back":    {"返回", "Back"},
	"common.time":    {"时间", "Time"},
	"common.by":      {"操作人", "By"},

	"status.draft":  {"草稿", "Draft"},
	"status.active": {"进行中", "Active"},
	"status.paused": {"已暂停", "Paused"},
	"status.ended":  {"已结束", "Ended"},

	"kind.direct":    {"立减", "Direct"},
	"kind.threshold": {"满减", "Threshold"},
	"kind.discount":  {"折扣", "Discount"},
	"kind.step":      {"每满减", "Per step"},
	"kind.composite": {"满减折扣", "Threshold + discount"},

	"source.shop":     {"店铺出资", "Shop-funded"},
	"source.platform": {"平台出资", "Platform-funded"},

	"tpl.title":           {"券模板", "Templates"},
	"tpl.new":             {"新建模板", "New template"},
	"tpl.edit":            {"编辑草稿", "Edit draft"},
	"tpl.filter.status":   {"状态", "Status"},
	"tpl.filter.kind":     {"类型", "Kind"},
	"tpl.filter.q":        {"名称包含", "Name contains"},
	"tpl.kind":            {"类型", "Kind"},
	"tpl.rule":            {"规则", "Rule"},
	"tpl.stock":           {"库存（剩余 / 总量）", "Stock (left / total)"},
	"tpl.issue":           {"发放时间", "Issue window"},
	"tpl.description":     {"说明", "Description"},
	"tpl.amount":          {"优惠金额（元）", "Amount off (yuan)"},
	"tpl.threshold":       {"门槛（元）", "Threshold (yuan)"},
	"tpl.rate":            {"折扣（付款百分比，85 即 8.5 折）", "Rate (percent paid: 85 is 15% off)"},
	"tpl.cap":             {"最多优惠（元）", "At most off (yuan)"},
	"tpl.step":            {"每满（元）", "Per full step (yuan)"},
	"tpl.stacking":        {"叠加规则", "Stacking"},
	"tpl.priority":        {"优先级（0–1000，大者优先）", "Priority (0–1000, higher first)"},
	"stack.any":           {"可与任何券叠加", "With any coupon"},
	"stack.exclusive":     {"不与其他券叠加", "Exclusive: never with another"},
	"stack.withShop":      {"仅与店铺券叠加", "Only with shop-funded coupons"},
	"stack.withPlatform":  {"仅与平台券叠加", "Only with platform-funded coupons"},
	"tpl.source":          {"出资方", "Funded by"},
	"tpl.scope":           {"适用范围", "Scope"},
	"tpl.scope.all":       {"全部商品", "All goods"},
	"tpl.scope.goods":     {"指定商品", "Listed goods"},
	"tpl.scope.cats":      {"指定品类", "Listed categories"},
	"tpl.scope.ids":       {"商品或品类编号（逗号或换行分隔）", "Goods or category ids (comma or line separated)"},
	"tpl.issueStart":      {"开始发放", "Issue from"},
	"tpl.issueEnd":        {"停止发放", "Issue until"},
	"tpl.validity":        {"有效期", "Validity"},
	"tpl.valid.fixed":     {"固定时间段", "Fixed window"},
	"tpl.valid.rel":       {"领取后若干小时", "Hours after receipt"},
	"tpl.validStart":      {"生效时间", "Valid from"},
	"tpl.validEnd":        {"失效时间", "Valid until"},
	"tpl.validHours":      {"有效小时数", "Valid hours"},
	"tpl.perUser":         {"每人限领", "Per-user limit"},
	"tpl.perUserDaily":    {"每人每日限领（北京时间）", "Per-user limit a day (Asia/Shanghai)"},
	"tpl.perUserWeekly":   {"每人每周限领（周一起，北京时间）", "Per-user limit a week (from Monday, Asia/Shanghai)"},
	"tpl.budget":          {"优惠总预算（元）", "Total discount budget (yuan)"},
	"tpl.noLimit":         {"不限", "no limit"},
	"tpl.initStock":       {"库存", "Stock"},
	"tpl.codePrefix":      {"券码前缀（可选）", "Code prefix (optional)"},
	"tpl.promoCode":       {"口令（可选，用户输入即可领券）", "Promo code (optional: users type it to claim)"},
	"tpl.promoCode.short": {"口令", "Promo code"},
	"tpl.shopNo":          {"店铺号", "Shop number"},
	"tpl.preview":         {"优惠预览", "Discount preview"},
	"tpl.preview.order":   {"示例订单金额（元）", "Example order (yuan)"},
	"tpl.preview.off":     {"优惠 %s 元，实付 %s 元", "%s yuan off, pays %s yuan"},
	"tpl.preview.no":      {"未达到使用门槛，不优惠", "Below the threshold: no discount"},
	"tpl.create":          {"创建草稿", "Create draft"},
	"tpl.created":         {"模板已创建（草稿）。", "Template created as a draft."},
	"tpl.activate":        {"启用", "Activate"},
	"tpl.pause":           {"暂停", "Pause"},
	"tpl.resume":          {"恢复", "Resume"},
	"tpl.terminate":       {"终止", "Terminate"},
	"tpl.terminate.ask":   {"终止后不能再发放或领取，确定吗？", "A terminated template can never issue again. Terminate?"},
	"tpl.addStock":        {"增加库存", "Add stock"},
	"tpl.addStock.n":      {"增加数量", "How many"},
	"tpl.history":         {"变更记录", "Audit trail"},
	"tpl.change":          {"变更", "Changes"},
	"tpl.live":            {"实时", "Live"},
	"tpl.stats":           {"统计", "Statistics"},
	"tpl.codes":           {"兑换码", "Codes"},
	"tpl.distribute":      {"批量发放", "Distribute"},
	"tpl.changed":         {"状态已更新为：%s。", "Status is now: %s."},
	"tpl.stockAdded":      {"已增加库存 %d。", "Added %d to the stock."},
	"tpl.rule.direct":     {"立减 %s 元", "%s yuan off"},
	"tpl.rule.thresh":     {"满 %s 减 %s 元", "%s yuan off from %s"},
	"tpl.rule.disc":       {"%s 折", "pay %s%%"},
	"tpl.rule.step":       {"每满 %s 减 %s，最多 %s 元", "%s off per %s, at most %s"},
	"tpl.rule.comp":       {"满 %s 减 %s 元再 %s 折", "from %s, %s yuan off then pay %s%% of the rest"},
	"tpl.ruleCap":         {"，最多优惠 %s 元", ", at most %s off"},
	"tpl.ruleFrom":        {"，满 %s 元可用", ", from %s"},
	"tpl.validHoursFmt":   {"领取后 %d 小时", "%d hours after receipt"},
	"tpl.eligibility":     {"领取条件（CEL，空为不限）", "Eligibility (CEL, empty for anyone)"},
	"tpl.applies":         {"使用条件（CEL，空为不限）", "Applies when (CEL, empty for always)"},
	"tpl.logoUrl":         {"图标地址（http/https）", "Logo URL (http/https)"},
	"tpl.category":        {"分类", "Category"},
	"tpl.goods":           {"适用商品 / 产品线（每行一个）", "Goods or product lines (one a line)"},
	"tpl.instructions":    {"使用说明", "Usage instructions"},
	"tpl.metadata":        {"附加信息（每行 key=value）", "Metadata (key=value, one a line)"},
	"tpl.rules":           {"规则版本", "Rules versions"},
	"tpl.rules.version":   {"版本", "Version"},
	"tpl.rules.effective": {"生效时间", "In force from"},
	"tpl.rules.current":   {"当前", "current"},
	"tpl.rules.toIssued":  {"也适用于已发放的券", "also governs coupons issued before"},

	"action.create":    {"创建", "Created"},
	"action.edit":      {"编辑", "Edited"},
	"action.activate":  {"启用", "Activated"},
	"action.pause":     {"暂停", "Paused"},
	"action.resume":    {"恢复", "Resumed"},
	"action.terminate": {"终止", "Terminated"},
	"action.end":       {"到期结束", "Ended"},
	"action.stock":     {"增加库存", "Stock added"},
	"action.rules":     {"调整规则", "Rules changed"},
}
