package parse

import "strings"

// internalFields are credentials and server bookkeeping that never reach
// an agent, whoever it acts as (the master key included): Parse Server's
// own columns all start with "_" (_hashed_password, _password_history,
// _email_verify_token, _perishable_token, _failed_login_count,
// _account_lockout_expires_at, _tombstone, _auth_data_<provider>,
// _rperm/_wperm, …); these are the ones that do not.
var internalFields = []string{"sessionToken", "authData", "password"}

// internalClassFields are credentials of one system class, on the same
// floor: `_Installation.deviceToken` is the push token of a device (with
// the app's push credentials, it sends that device notifications).
var internalClassFields = map[string][]string{ClassInstallation: {"deviceToken"}}

// IsInternalField reports whether a field is on the internal-field floor:
// removed from every schema, row, key list and constraint an agent sees.
func IsInternalField(name string) bool {
	return strings.HasPrefix(name, "_") || contains(internalFields, name)
}

// IsInternalFieldOf is IsInternalField for a field of class, with the
// credentials of that class (internalClassFields) on the floor too.
func IsInternalFieldOf(class, name string) bool {
	return IsInternalField(name) || contains(internalClassFields[class], name)
}

// DefaultHiddenClasses are Parse's system classes no agent sees, master
// key included, unless the operator unhides them: `_Session` holds live
// session tokens, `_JobStatus` and `_JobSchedule` server internals and
// scheduler parameters, `_Product` a vestigial in-app-purchase feature;
// the rest are server bookkeeping. `_Installation` and `_Audience` are not
// hidden: they are read under the master key, class-level permissions and
// ACLs, and Parse Server's own rule for `_Installation` (MasterKeyOnly).
var DefaultHiddenClasses = []string{ClassSession, "_Product", "_JobStatus", "_JobSchedule",
	"_PushStatus", "_Hooks", "_GlobalConfig", "_GraphQLConfig", "_Idempotency",
	"_ExportProgress"}

// masterOnlyClasses are the classes every operation of which Parse Server
// allows only the master key, whatever their class-level permissions.
var masterOnlyClasses = []string{"_JobStatus", "_PushStatus", "_Hooks", "_GlobalConfig", "_JobSchedule", "_Idempotency"}

// MasterKeyOnly reports whether Parse Server allows op on class only with
// the master key, whatever the class-level permissions say: every
// operation on its bookkeeping classes, and a find (a count is one) or a
// delete of `_Installation`. A get or an update of one installation
// follows the class-level permissions and its ACL.
func MasterKeyOnly(class string, op Op) bool {
	switch {
	case contains(masterOnlyClasses, class):
		return true
	case class == ClassInstallation:
		return op == OpFind || op == OpCount || op == OpDelete
	}
	return false
}
