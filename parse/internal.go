package parse

import "strings"

// internalFields are credentials and server bookkeeping that never reach
// an agent, whoever it acts as (the master key included): Parse Server's
// own columns all start with "_" (_hashed_password, _password_history,
// _email_verify_token, _perishable_token, _failed_login_count,
// _account_lockout_expires_at, _tombstone, _auth_data_<provider>,
// _rperm/_wperm, …); these are the ones that do not.
var internalFields = []string{"sessionToken", "authData", "password"}

// IsInternalField reports whether a field is on the internal-field floor:
// removed from every schema, row, key list and constraint an agent sees.
func IsInternalField(name string) bool {
	return strings.HasPrefix(name, "_") || contains(internalFields, name)
}

// DefaultHiddenClasses are Parse's system classes no agent sees, master
// key included, unless the operator unhides them: `_Session` holds live
// session tokens, `_JobStatus` and `_JobSchedule` server internals and
// scheduler parameters, `_Product` a vestigial in-app-purchase feature;
// the rest are server bookkeeping.
var DefaultHiddenClasses = []string{ClassSession, "_Product", "_JobStatus", "_JobSchedule",
	"_PushStatus", "_Hooks", "_GlobalConfig", "_GraphQLConfig", "_Audience", "_Idempotency",
	"_Installation", "_ExportProgress"}
