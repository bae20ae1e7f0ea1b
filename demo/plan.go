package demo

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/parsemcp/parsemcp/parse"
)

// The kinds of objects, in generation order.
const (
	kOrg = iota
	kUser
	kRole
	kProject
	kCustomer
	kProduct
	kTicket
	kComment
	kOrder
	numKinds
)

var kindClass = [numKinds]string{
	ClassOrganization, parse.ClassUser, parse.ClassRole, ClassProject, ClassCustomer, ClassProduct,
	ClassTicket, ClassComment, ClassOrder,
}

var kindPrefix = [numKinds]byte{'O', 'U', 'R', 'P', 'C', 'D', 'T', 'M', 'S'}

// id returns the objectId of the i-th (0-based) object of kind k.
func id(k, i int) string { return parse.IDFromSeq(kindPrefix[k], uint64(i)+1) }

// The share of the objects left after organizations and roles that each
// kind gets.
var kindShare = [numKinds]float64{
	kUser: 0.06, kProject: 0.02, kCustomer: 0.08, kProduct: 0.015,
	kTicket: 0.30, kComment: 0.30, kOrder: 0.225,
}

// fixtureUser is one of the users every dataset starts with.
type fixtureUser struct {
	name   string
	org    int      // index of the organization
	roles  []string // global roles
	member bool     // in the organization's role
}

var fixtureUsers = []fixtureUser{
	{AdminUsername, 0, []string{RoleAdmin}, true},
	{MemberUsername, 0, nil, true},
	{SupportUsername, 0, []string{RoleSupport}, true},
	{NoRoleUsername, 0, nil, false},
	{GlobexUsername, 1, nil, true},
}

// noRoleUser is the index of the fixture user left out of every role,
// project and random assignment.
const noRoleUser = 3

var globalRoles = []string{RoleAdmin, RoleManager, RoleSupport, RoleSales}

// fixtureOrgs are the first organizations, with their fixed names.
var fixtureOrgs = []struct{ name, slug, plan, city string }{
	{OrgAcmeName, OrgAcmeSlug, "enterprise", "San Francisco"},
	{OrgGlobexName, OrgGlobexSlug, "business", "London"},
	{OrgInitechName, OrgInitechSlug, "free", "Austin"},
}

// fixtureTickets is the number of Acme tickets with a fixed ACL kind.
const fixtureTickets = 6

// plan is how many objects of each kind to write and, for the kinds split
// into contiguous per-organization ranges, where each organization's range
// starts: off[k][o] .. off[k][o+1]. For users the ranges cover the generic
// users, which follow the fixture users.
type plan struct {
	orgs  int
	total int
	count [numKinds]int
	off   [numKinds][]int
}

func makePlan(rows int, r *rand.Rand) plan {
	var p plan
	p.orgs = min(max(rows/2000, len(fixtureOrgs)), 1000)
	// Tenants differ in size (Zipf-like, Acme the largest), with jitter.
	w := make([]float64, p.orgs)
	for o := range w {
		w[o] = 1 / math.Pow(float64(o+1), 0.8)
		if o >= len(fixtureOrgs) {
			w[o] *= 0.6 + 0.8*r.Float64()
		}
	}
	p.count[kOrg] = p.orgs
	p.count[kRole] = len(globalRoles) + p.orgs
	perOrgMin := func(k int) []int {
		m := make([]int, p.orgs)
		for o := range m {
			m[o] = 1
		}
		if k == kTicket {
			m[0] = fixtureTickets
		}
		return m
	}
	kinds := []int{kUser, kProject, kCustomer, kProduct, kTicket, kComment, kOrder}
	shares := make([]float64, len(kinds))
	mins := make([]int, len(kinds))
	for i, k := range kinds {
		shares[i] = kindShare[k]
		for _, n := range perOrgMin(k) {
			mins[i] += n
		}
		if k == kUser {
			mins[i] += len(fixtureUsers)
		}
	}
	rest := max(rows-p.count[kOrg]-p.count[kRole], 0)
	for i, n := range allocate(rest, shares, mins) {
		p.count[kinds[i]] = n
	}
	for _, k := range kinds {
		n := p.count[k]
		if k == kUser {
			n -= len(fixtureUsers)
		}
		per := allocate(n, w, perOrgMin(k))
		p.off[k] = make([]int, p.orgs+1)
		for o, c := range per {
			p.off[k][o+1] = p.off[k][o] + c
		}
	}
	for _, n := range p.count {
		p.total += n
	}
	return p
}

// allocate splits total into len(weights) parts proportional to weights,
// each at least its min, summing to max(total, sum of mins) exactly
// (largest remainder).
func allocate(total int, weights []float64, mins []int) []int {
	out := make([]int, len(weights))
	sumMin := 0
	for _, m := range mins {
		sumMin += m
	}
	rem := max(total-sumMin, 0)
	sumW := 0.0
	for _, x := range weights {
		sumW += x
	}
	frac := make([]float64, len(weights))
	given := 0
	for i, x := range weights {
		exact := float64(rem) * x / sumW
		n := int(exact)
		out[i] = mins[i] + n
		frac[i] = exact - float64(n)
		given += n
	}
	idx := make([]int, len(weights))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return frac[idx[a]] > frac[idx[b]] })
	for i := 0; given < rem; i++ {
		out[idx[i%len(idx)]]++
		given++
	}
	return out
}
