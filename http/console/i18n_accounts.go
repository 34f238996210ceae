package console

// accountMessages are the words of the account pages.
var accountMessages = map[string]message{
	"acct.title":         {"账号管理", "Accounts"},
	"acct.new":           {"新建账号", "New account"},
	"acct.role":          {"角色", "Role"},
	"acct.role.merchant": {"商家运营", "Merchant operator"},
	"acct.role.admin":    {"平台管理员", "Platform admin"},
	"acct.password":      {"初始密码（至少 10 位）", "Password (at least 10 characters)"},
	"acct.newPassword":   {"新密码", "New password"},
	"acct.create":        {"创建账号", "Create account"},
	"acct.filter":        {"账号包含", "Name contains"},
	"acct.disabled":      {"已停用", "Disabled"},
	"acct.enabled":       {"正常", "Active"},
	"acct.disable":       {"停用", "Disable"},
	"acct.enable":        {"启用", "Enable"},
	"acct.reset":         {"重置密码", "Reset password"},
	"acct.done.created":  {"已创建账号 %s。", "Account %s created."},
	"acct.done.disabled": {"已停用账号 %s，其登录已失效。", "Account %s disabled; its sessions ended."},
	"acct.done.enabled":  {"已启用账号 %s。", "Account %s enabled."},
	"acct.done.password": {"已重置 %s 的密码，其登录已失效。", "Password of %s reset; its sessions ended."},
}
