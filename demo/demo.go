// Package demo writes a deterministic demo dataset into any store.Store: a
// multi-tenant ticketing and ordering app with organizations, users, roles,
// projects, tickets, comments, customers, products and orders.
//
// The data is a pure function of Options.Rows and Options.Seed: the same
// pair always yields byte-identical objects (ids, fields, ACLs, timestamps,
// relations). Object ids come from parse.IDFromSeq with one prefix letter per
// class, numbered from 1 in generation order:
//
//	Organization O   Project P   Ticket T   Comment M   Customer C
//	Product      D   Order   S   _User  U   _Role   R
//
// Every timestamp lies between Start and End (two years ending 2026-06-30);
// only planned dates (Project.dueDate, Ticket.dueDate) may lie after End.
//
// # Tenancy and permissions
//
// Every user class but Organization has an `org` Pointer to Organization.
// Each organization has a member role named OrgRole(slug) ("org-acme");
// most rows of an organization are readable by that role. Global staff roles
// are Admin, Manager, Support and Sales; through `_Role.roles`, Admin
// inherits Manager, Manager inherits Support and Sales, and Admin inherits
// every organization role (Parse semantics: a role's `roles` relation lists
// the child roles whose users get its rights).
//
// ACLs cover every kind: no ACL (public), explicit public read
// ({"*":{"read":true}, …}), per-user, per-role and {} (master key only).
// Class-level permissions: Order is readable (get, find, count) by roles
// Admin, Manager and Sales only, writable by Admin and Sales; Customer needs
// an authenticated user to read and hides email and phone (protectedFields)
// from everyone but roles Sales and Admin; Project hides budget from
// everyone but roles Manager and Admin; Comment needs an authenticated user
// to create; Ticket is deleted by Admin and Manager only; Organization and
// Product are created, updated and deleted by role Admin only; no class
// accepts new fields without the master key (addField {}).
//
// # Fixtures
//
// Some rows are the same for every seed and size (their ids and the facts
// documented on the constants below); tests may rely on them. Their other
// fields (dates, texts, numbers) vary with the seed.
package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Version identifies the generator's output: it changes whenever the same
// Options would produce different data (use it to key caches).
const Version = "1"

// DefaultRows is the dataset size when Options.Rows <= 0.
const DefaultRows = 10000

// Options configures Generate.
type Options struct {
	// Rows is the approximate total number of objects across all classes
	// (within ±5% once it is a few hundred or more); DefaultRows when <= 0.
	Rows int
	// Seed selects the data; 1 when 0. The same Rows and Seed give the
	// same data.
	Seed int64
	// Progress, when set, is called after each batch written with the
	// number of objects written so far and the total planned.
	Progress func(done, total int)
}

// Stats reports what Generate wrote.
type Stats struct {
	Objects  int            // objects written, all classes together
	PerClass map[string]int // objects written per class
}

// The classes Generate writes.
const (
	ClassOrganization = "Organization"
	ClassProject      = "Project"
	ClassTicket       = "Ticket"
	ClassComment      = "Comment"
	ClassCustomer     = "Customer"
	ClassProduct      = "Product"
	ClassOrder        = "Order"
)

// Classes returns the names of the classes Generate creates and fills: the
// user classes first (Classes()[0], Organization, exists only in a store
// Generate wrote to), then the system classes _User and _Role it fills.
func Classes() []string {
	return []string{
		ClassOrganization, ClassProject, ClassTicket, ClassComment, ClassCustomer, ClassProduct, ClassOrder,
		parse.ClassUser, parse.ClassRole,
	}
}

// Start and End bound every timestamp of the dataset (createdAt, updatedAt
// and event dates): the two years ending on 2026-06-30. Do not modify.
var (
	Start = time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	End   = time.Date(2026, 6, 30, 23, 59, 59, 0, time.UTC)
)

// Fixture organizations. There are always at least these three; Acme is the
// largest tenant. Their plans are enterprise, business and free; they are
// based in San Francisco (USD), London (GBP) and Austin (USD).
const (
	OrgAcmeID      = "OAAAAAAAAB"
	OrgAcmeName    = "Acme Corp"
	OrgAcmeSlug    = "acme"
	OrgGlobexID    = "OAAAAAAAAC"
	OrgGlobexName  = "Globex Corporation"
	OrgGlobexSlug  = "globex"
	OrgInitechID   = "OAAAAAAAAD"
	OrgInitechName = "Initech"
	OrgInitechSlug = "initech"
)

// OrgRole returns the name of the member role of the organization with the
// given slug.
func OrgRole(slug string) string { return "org-" + slug }

// Fixture roles: the global staff roles and the member roles of the fixture
// organizations, with their objectIds. Every other organization's role is
// OrgRole(its slug).
const (
	RoleAdmin   = "Admin"
	RoleManager = "Manager"
	RoleSupport = "Support"
	RoleSales   = "Sales"
	RoleAcme    = "org-acme"
	RoleGlobex  = "org-globex"
	RoleInitech = "org-initech"

	RoleAdminID   = "RAAAAAAAAB"
	RoleManagerID = "RAAAAAAAAC"
	RoleSupportID = "RAAAAAAAAD"
	RoleSalesID   = "RAAAAAAAAE"
	RoleAcmeID    = "RAAAAAAAAF"
	RoleGlobexID  = "RAAAAAAAAG"
	RoleInitechID = "RAAAAAAAAH"
)

// Fixture users. Each has the ACL {"*":{"read":true},"<own id>":{"read":true,"write":true}}
// and the email <username>@<org slug>.example.com.
const (
	// AdminUserID ("admin") is in roles Admin and org-acme, owns Acme and
	// ProjectWebsiteID, and is a member of ProjectWebsiteID.
	AdminUserID   = "UAAAAAAAAB"
	AdminUsername = "admin"
	// MemberUserID ("member") is in role org-acme only and a member of
	// ProjectWebsiteID. It sees some but not all Acme tickets.
	MemberUserID   = "UAAAAAAAAC"
	MemberUsername = "member"
	// SupportUserID ("support") is in roles Support and org-acme and a
	// member of ProjectWebsiteID.
	SupportUserID   = "UAAAAAAAAD"
	SupportUsername = "support"
	// NoRoleUserID ("norole") belongs to Acme but is in no role and no
	// project and is never assigned anything: it sees public rows only
	// (and its own _User row).
	NoRoleUserID   = "UAAAAAAAAE"
	NoRoleUsername = "norole"
	// GlobexUserID ("globex") is in role org-globex only and owns Globex.
	GlobexUserID   = "UAAAAAAAAF"
	GlobexUsername = "globex"
)

// Fixture project and tickets. ProjectWebsiteID ("Website Redesign", key
// WEB) is Acme's first project, readable by role org-acme; its members are
// admin, member and support. The six fixture tickets belong to it, one per
// ACL kind.
const (
	ProjectWebsiteID   = "PAAAAAAAAB"
	ProjectWebsiteName = "Website Redesign"

	// TicketNoACLID has no ACL: public read and write.
	TicketNoACLID = "TAAAAAAAAB"
	// TicketPublicReadID is {"*":read, "role:org-acme":read+write, "role:Admin":read+write}.
	TicketPublicReadID = "TAAAAAAAAC"
	// TicketOrgID is {"role:org-acme":read+write, "role:Admin":read+write}.
	TicketOrgID = "TAAAAAAAAD"
	// TicketMemberID is per-user: {member:read+write, admin:read+write};
	// member reported it, admin is the assignee.
	TicketMemberID = "TAAAAAAAAE"
	// TicketSupportID is per-role: {"role:Support":read+write, "role:Admin":read+write}.
	TicketSupportID = "TAAAAAAAAF"
	// TicketMasterOnlyID has the empty ACL {}: master key only.
	TicketMasterOnlyID = "TAAAAAAAAG"
)

// Generate creates the demo classes (schemas with class-level permissions)
// and writes the objects and relations, in batches. The store must not
// have the user classes yet and its _User and _Role must be empty.
func Generate(ctx context.Context, s store.Store, opt Options) (Stats, error) {
	if opt.Rows <= 0 {
		opt.Rows = DefaultRows
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	existing, err := s.Schemas(ctx)
	if err != nil {
		return Stats{}, err
	}
	for _, sch := range existing {
		for _, c := range Classes() {
			if sch.ClassName == c && !parse.IsSystemClass(c) {
				return Stats{}, fmt.Errorf("demo: class %s already exists: %w", c, store.ErrClassExists)
			}
		}
	}
	for _, c := range []string{parse.ClassUser, parse.ClassRole} {
		n, err := s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: c})
		if err != nil {
			return Stats{}, fmt.Errorf("demo: %s: %w", c, err)
		}
		if n > 0 {
			return Stats{}, fmt.Errorf("demo: %s already holds %d objects; the demo needs an empty store", c, n)
		}
	}
	for _, sch := range schemas() {
		if err := s.CreateClass(ctx, sch); err != nil {
			return Stats{}, fmt.Errorf("demo: create class %s: %w", sch.ClassName, err)
		}
	}
	g := newGen(ctx, s, opt)
	if err := g.run(); err != nil {
		return g.stats, fmt.Errorf("demo: %w", err)
	}
	return g.stats, nil
}
