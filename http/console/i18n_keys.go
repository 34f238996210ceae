package console

// keyMessages are the words of the service keys' page.
var keyMessages = map[string]message{
	"key.title":        {"服务密钥", "Service keys"},
	"key.new":          {"新建服务密钥", "New service key"},
	"key.name":         {"用途", "Name"},
	"key.owner":        {"所属", "Owner"},
	"key.platform":     {"平台", "Platform"},
	"key.shopHint":     {"店铺号（留空为平台）", "Shop number (blank: the platform)"},
	"key.scopes":       {"权限范围", "Scopes"},
	"key.create":       {"创建密钥", "Create key"},
	"key.key":          {"密钥", "Key"},
	"key.lastUsed":     {"最近使用", "Last used"},
	"key.never":        {"从未", "Never"},
	"key.revoked":      {"已吊销", "Revoked"},
	"key.active":       {"有效", "Active"},
	"key.revoke":       {"吊销", "Revoke"},
	"key.once":         {"请立即复制保存：此密钥只显示这一次，服务器只保存其哈希。", "Copy it now: this key is shown this once; the server keeps only its hash."},
	"key.done.created": {"已创建服务密钥 %s。", "Service key %s created."},
	"key.done.revoked": {"已吊销服务密钥 %s：各进程将在 5 秒内拒绝它。", "Service key %s revoked: every process refuses it within 5 seconds."},
}
