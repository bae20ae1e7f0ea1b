package demo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// batchSize is the number of objects per store.Create call.
const batchSize = 2000

// relationChunk bounds the ids per AddRelation call.
const relationChunk = 5000

const (
	minuteMs = int64(time.Minute / time.Millisecond)
	dayMs    = int64(24 * time.Hour / time.Millisecond)
)

var (
	startMs = Start.UnixMilli()
	endMs   = End.UnixMilli()
)

// orgInfo is what later kinds need to know about an organization.
type orgInfo struct {
	slug, domain string
	role         string // the ACL entry of its member role
	city         int
	created      int64
}

// gen holds the state of one Generate call: the plan, and the few facts per
// object that objects written later refer to (never whole objects).
type gen struct {
	ctx      context.Context
	s        store.Store
	seed     uint64
	progress func(done, total int)
	p        plan
	done     int
	stats    Stats

	orgs        []orgInfo
	orgUsers    [][]int32  // per organization: the users assignments are drawn from
	roleMembers [][]string // per role index: user ids

	projCreated []int64
	projKey     []string
	projSeq     []int32

	custCreated []int64
	custCity    []uint8

	prodName  []string
	prodSKU   []string
	prodPrice []float64

	tickCreated []int64
	tickRep     []int32
	tickAsg     []int32 // -1: unassigned
	tickKind    []aclKind
}

func newGen(ctx context.Context, s store.Store, opt Options) *gen {
	g := &gen{ctx: ctx, s: s, seed: uint64(opt.Seed), progress: opt.Progress}
	g.p = makePlan(opt.Rows, g.rng(-1))
	g.stats.PerClass = map[string]int{}
	for _, c := range Classes() {
		g.stats.PerClass[c] = 0
	}
	return g
}

// rng returns the random stream of one kind, so each kind's data depends on
// the seed and the plan only.
func (g *gen) rng(k int) *rand.Rand {
	return rand.New(rand.NewPCG(g.seed, uint64(k+2)*0x9E3779B97F4A7C15))
}

func (g *gen) run() error {
	for _, step := range []func() error{
		g.genOrgs, g.genUsers, g.genRoles, g.genProjects, g.genCustomers, g.genProducts,
		g.genTickets, g.genComments, g.genOrders,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// --- batching ---

type relation struct {
	class, field, owner string
	ids                 []string
}

type batcher struct {
	g    *gen
	k    int
	objs []parse.Object
	rels []relation
}

func (g *gen) batcher(k int) *batcher {
	return &batcher{g: g, k: k, objs: make([]parse.Object, 0, batchSize)}
}

func (b *batcher) add(o parse.Object) error {
	b.objs = append(b.objs, o)
	if len(b.objs) >= batchSize {
		return b.flush()
	}
	return nil
}

func (b *batcher) relate(class, field, owner string, ids []string) {
	b.rels = append(b.rels, relation{class, field, owner, ids})
}

func (b *batcher) flush() error {
	g := b.g
	if err := g.ctx.Err(); err != nil {
		return err
	}
	if n := len(b.objs); n > 0 {
		class := kindClass[b.k]
		if err := g.s.Create(g.ctx, class, b.objs); err != nil {
			return fmt.Errorf("write %s: %w", class, err)
		}
		g.done += n
		g.stats.Objects += n
		g.stats.PerClass[class] += n
		clear(b.objs)
		b.objs = b.objs[:0]
	}
	for _, r := range b.rels {
		if err := g.relate(r); err != nil {
			return err
		}
	}
	clear(b.rels)
	b.rels = b.rels[:0]
	if g.progress != nil {
		g.progress(g.done, g.p.total)
	}
	return nil
}

func (g *gen) relate(r relation) error {
	for len(r.ids) > 0 {
		n := min(len(r.ids), relationChunk)
		if err := g.s.AddRelation(g.ctx, r.class, r.field, r.owner, r.ids[:n]); err != nil {
			return fmt.Errorf("relate %s.%s: %w", r.class, r.field, err)
		}
		r.ids = r.ids[n:]
	}
	return nil
}

// --- random helpers ---

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// wpick returns an index drawn with the given weights.
func wpick(r *rand.Rand, w ...float64) int {
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	x := r.Float64() * sum
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// skewed returns an index in [0, n) favouring the low end.
func skewed(r *rand.Rand, n int, power float64) int {
	return min(int(float64(n)*math.Pow(r.Float64(), power)), n-1)
}

// pickTags returns up to n distinct strings of xs, in xs order.
func pickTags(r *rand.Rand, xs []string, n int) []any {
	out := make([]any, 0, n)
	if n == 0 {
		return out
	}
	var used uint64
	for range n {
		used |= 1 << r.IntN(len(xs))
	}
	for i, x := range xs {
		if used&(1<<i) != 0 {
			out = append(out, x)
		}
	}
	return out
}

func hexString(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// after returns a time between t and End, later times more likely (the app
// grows).
func after(r *rand.Rand, t int64) int64 {
	if t >= endMs {
		return endMs
	}
	return t + int64(float64(endMs-t)*math.Sqrt(r.Float64()))
}

// soon returns t plus an exponential delay of the given mean, capped at End.
func soon(r *rand.Rand, t, mean int64) int64 {
	return min(t+int64(r.ExpFloat64()*float64(mean)), endMs)
}

func iso(ms int64) string          { return parse.FormatDate(time.UnixMilli(ms)) }
func date(ms int64) map[string]any { return parse.Date(time.UnixMilli(ms)) }

// --- ACLs ---

type aclKind uint8

const (
	aclNone       aclKind = iota // no ACL: public read and write
	aclPublicRead                // "*" may read
	aclOrg                       // the organization's role
	aclUser                      // named users only
	aclRole                      // staff roles only
	aclMaster                    // {}: master key only
)

func rw() map[string]any { return map[string]any{"read": true, "write": true} }
func ro() map[string]any { return map[string]any{"read": true} }

// acl builds an ACL granting read+write to rwKeys and read to roKeys.
func acl(rwKeys []string, roKeys ...string) map[string]any {
	m := make(map[string]any, len(rwKeys)+len(roKeys))
	for _, k := range roKeys {
		m[k] = ro()
	}
	for _, k := range rwKeys {
		m[k] = rw()
	}
	return m
}

func setACL(o parse.Object, a map[string]any) {
	if a != nil {
		o[parse.FieldACL] = a
	}
}

// --- the kinds ---

func (g *gen) user(o int, r *rand.Rand) int32 { return pick(r, g.orgUsers[o]) }

func userPtr(u int32) map[string]any { return parse.Pointer(parse.ClassUser, id(kUser, int(u))) }

func (g *gen) orgPtr(o int) map[string]any { return parse.Pointer(ClassOrganization, id(kOrg, o)) }

func slugify(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, " ", "-"))
}

func (g *gen) genOrgs() error {
	r := g.rng(kOrg)
	n := g.p.orgs
	// Which users each organization's assignments draw from: its fixture
	// users (but the role-less one), then its range of generic users.
	g.orgUsers = make([][]int32, n)
	for i, f := range fixtureUsers {
		if i != noRoleUser {
			g.orgUsers[f.org] = append(g.orgUsers[f.org], int32(i))
		}
	}
	base := len(fixtureUsers)
	for o := range n {
		for u := g.p.off[kUser][o]; u < g.p.off[kUser][o+1]; u++ {
			g.orgUsers[o] = append(g.orgUsers[o], int32(base+u))
		}
	}
	used := map[string]bool{}
	b := g.batcher(kOrg)
	g.orgs = make([]orgInfo, n)
	for o := range n {
		var name, slug string
		if o < len(fixtureOrgs) {
			name, slug = fixtureOrgs[o].name, fixtureOrgs[o].slug
		} else {
			name = pick(r, companyStems) + " " + pick(r, companySuffixes)
			slug = slugify(name)
			for i := 2; used[slug]; i++ {
				slug = slugify(name) + "-" + strconv.Itoa(i)
			}
		}
		used[slug] = true
		ct := r.IntN(len(cities))
		if o < len(fixtureOrgs) {
			ct = cityIndex(fixtureOrgs[o].city)
		}
		c := cities[ct]
		var created int64
		if o == 0 {
			created = startMs + dayMs + r.Int64N(30*dayMs)
		} else {
			created = startMs + dayMs + int64(float64(endMs-startMs)*0.8*r.Float64())
		}
		info := orgInfo{slug: slug, domain: slug + ".example.com", role: parse.RoleEntry(OrgRole(slug)), city: ct, created: created}
		g.orgs[o] = info
		tier := []string{"free", "team", "business", "enterprise"}[wpick(r, 0.3, 0.35, 0.25, 0.1)]
		if o < len(fixtureOrgs) {
			tier = fixtureOrgs[o].plan
		}
		features := []any{}
		for i, f := range orgFeatures {
			if chance(r, 0.2+0.15*float64(i%3)) {
				features = append(features, f)
			}
		}
		obj := parse.Object{
			"objectId": id(kOrg, o), "createdAt": iso(created), "updatedAt": iso(after(r, created)),
			"name": name, "slug": slug, "domain": info.domain, "plan": tier,
			"seats":  float64(len(g.orgUsers[o]) + r.IntN(20)),
			"active": o < len(fixtureOrgs) || chance(r, 0.92),
			"settings": map[string]any{
				"timezone": c.Timezone, "locale": c.Locale, "currency": c.Currency, "features": features,
				"sso": tier == "enterprise" || chance(r, 0.1), "retentionDays": float64(pick(r, []int{30, 90, 365})),
			},
			"owner":        userPtr(g.orgUsers[o][0]),
			"headquarters": geo(r, c, 0.05),
		}
		if tier == "free" || (tier == "team" && chance(r, 0.3)) {
			obj["trialEndsAt"] = date(created + 14*dayMs)
		}
		if o < len(fixtureOrgs) || chance(r, 0.8) {
			setACL(obj, acl([]string{roleAdmin}, info.role))
		} else {
			setACL(obj, acl([]string{roleAdmin}, parse.PublicKey))
		}
		if err := b.add(obj); err != nil {
			return err
		}
	}
	return b.flush()
}

func cityIndex(name string) int {
	for i, c := range cities {
		if c.Name == name {
			return i
		}
	}
	panic("demo: unknown city " + name)
}

func geo(r *rand.Rand, c city, jitter float64) map[string]any {
	lat := math.Round((c.Lat+(r.Float64()*2-1)*jitter)*1e6) / 1e6
	lng := math.Round((c.Lng+(r.Float64()*2-1)*jitter)*1e6) / 1e6
	return parse.GeoPoint(lat, lng)
}

func (g *gen) genUsers() error {
	r := g.rng(kUser)
	g.roleMembers = make([][]string, len(globalRoles)+g.p.orgs)
	roleIndex := map[string]int{}
	for i, name := range globalRoles {
		roleIndex[name] = i
	}
	b := g.batcher(kUser)
	write := func(u, o int, username string, roles []string, member, fixture bool) error {
		uid := id(kUser, u)
		org := g.orgs[o]
		var created int64
		if g.orgUsers[o][0] == int32(u) {
			created = org.created - minuteMs*(1+r.Int64N(30)) // the owner signed up, then created the org
		} else {
			created = after(r, org.created)
		}
		if member {
			g.roleMembers[len(globalRoles)+o] = append(g.roleMembers[len(globalRoles)+o], uid)
		}
		for _, name := range roles {
			g.roleMembers[roleIndex[name]] = append(g.roleMembers[roleIndex[name]], uid)
		}
		obj := parse.Object{
			"objectId": uid, "createdAt": iso(created), "updatedAt": iso(after(r, created)),
			"username": username, "email": username + "@" + org.domain, "emailVerified": fixture || chance(r, 0.85),
		}
		if !fixture && chance(r, 0.08) {
			obj["authData"] = map[string]any{"google": map[string]any{"id": fmt.Sprintf("10%019d", r.Uint64N(1e19))}}
		}
		switch k := wpick(r, 0.85, 0.10, 0.05); {
		case fixture || k == 0:
			setACL(obj, acl([]string{uid}, parse.PublicKey))
		case k == 1:
			setACL(obj, acl([]string{uid}))
		}
		return b.add(obj)
	}
	for i, f := range fixtureUsers {
		if err := write(i, f.org, f.name, f.roles, f.member, true); err != nil {
			return err
		}
	}
	base := len(fixtureUsers)
	for o := range g.p.orgs {
		for u := base + g.p.off[kUser][o]; u < base+g.p.off[kUser][o+1]; u++ {
			first, last := pick(r, firstNames), pick(r, lastNames)
			username := strings.ToLower(first+"."+last) + strconv.Itoa(u)
			var roles []string
			for i, p := range []float64{0.005, 0.04, 0.10, 0.08} {
				if chance(r, p) {
					roles = append(roles, globalRoles[i])
				}
			}
			if err := write(u, o, username, roles, chance(r, 0.94), false); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

func (g *gen) genRoles() error {
	r := g.rng(kRole)
	b := g.batcher(kRole)
	nGlobal := len(globalRoles)
	for i := range nGlobal + g.p.orgs {
		name, created := "", startMs
		if i < nGlobal {
			name = globalRoles[i]
		} else {
			name = OrgRole(g.orgs[i-nGlobal].slug)
			created = g.orgs[i-nGlobal].created
		}
		rid := id(kRole, i)
		obj := parse.Object{
			"objectId": rid, "createdAt": iso(created), "updatedAt": iso(after(r, created)), "name": name,
			"ACL": acl([]string{roleAdmin}, parse.PublicKey),
		}
		if err := b.add(obj); err != nil {
			return err
		}
		if len(g.roleMembers[i]) > 0 {
			b.relate(parse.ClassRole, "users", rid, g.roleMembers[i])
		}
		// Child roles inherit this role's rights: Admin inherits Manager and
		// every organization role; Manager inherits Support and Sales.
		switch {
		case name == RoleManager || i >= nGlobal:
			b.relate(parse.ClassRole, "roles", rid, []string{id(kRole, 0)})
		case name == RoleSupport || name == RoleSales:
			b.relate(parse.ClassRole, "roles", rid, []string{id(kRole, 1)})
		}
	}
	g.roleMembers = nil
	return b.flush()
}

func (g *gen) genProjects() error {
	r := g.rng(kProject)
	n := g.p.count[kProject]
	g.projCreated = make([]int64, n)
	g.projKey = make([]string, n)
	g.projSeq = make([]int32, n)
	b := g.batcher(kProject)
	for o := range g.p.orgs {
		org := g.orgs[o]
		keys := map[string]bool{}
		nameBase := r.IntN(len(projectNames))
		lo, hi := g.p.off[kProject][o], g.p.off[kProject][o+1]
		for p := lo; p < hi; p++ {
			j := p - lo
			fixture := o == 0 && j == 0
			name := projectNames[(nameBase+j)%len(projectNames)]
			if fixture {
				name = ProjectWebsiteName
			}
			if j >= len(projectNames) {
				name += " " + strconv.Itoa(j/len(projectNames)+1)
			}
			key := strings.ToUpper(name[:3])
			for i := 2; keys[key]; i++ {
				key = strings.ToUpper(name[:3]) + strconv.Itoa(i)
			}
			keys[key] = true
			g.projKey[p] = key
			created := after(r, org.created)
			g.projCreated[p] = created
			status := projectStatuses[wpick(r, 0.15, 0.55, 0.1, 0.2)]
			owner := g.user(o, r)
			members := []int32{owner}
			for range 1 + r.IntN(6) {
				u := g.user(o, r)
				dup := false
				for _, m := range members {
					dup = dup || m == u
				}
				if !dup {
					members = append(members, u)
				}
			}
			if fixture {
				status, owner, members = "active", 0, []int32{0, 1, 2}
			}
			startDate := soon(r, created, 7*dayMs)
			obj := parse.Object{
				"objectId": id(kProject, p), "createdAt": iso(created), "updatedAt": iso(after(r, created)),
				"org": g.orgPtr(o), "name": name, "key": key,
				"description": pick(r, descriptionSentences) + " " + pick(r, descriptionSentences),
				"status":      status, "owner": userPtr(owner),
				"budget":    float64(5+r.IntN(496)) * 1000,
				"archived":  status == "completed" && chance(r, 0.6),
				"startDate": date(startDate), "tags": pickTags(r, projectTags, 1+r.IntN(3)),
				"color": pick(r, colors),
			}
			if chance(r, 0.7) {
				obj["dueDate"] = date(startDate + (30+r.Int64N(335))*dayMs)
			}
			if chance(r, 0.4) {
				obj["logo"] = parse.File(hexString(r, 32)+"_logo.png", "")
			}
			memberIDs := make([]string, len(members))
			for i, m := range members {
				memberIDs[i] = id(kUser, int(m))
			}
			switch k := wpick(r, 0.7, 0.1, 0.15, 0.05); {
			case fixture || k == 0:
				setACL(obj, acl([]string{org.role, roleAdmin}))
			case k == 1:
				setACL(obj, acl([]string{org.role, roleAdmin}, parse.PublicKey))
			case k == 2:
				setACL(obj, acl(memberIDs[:1], memberIDs[1:]...))
			default:
				setACL(obj, map[string]any{})
			}
			b.relate(ClassProject, "members", id(kProject, p), memberIDs)
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

var dialCodes = map[string]string{
	"US": "1", "CA": "1", "MX": "52", "BR": "55", "GB": "44", "IE": "353", "FR": "33", "DE": "49", "NL": "31",
	"ES": "34", "IT": "39", "SE": "46", "PL": "48", "CH": "41", "JP": "81", "SG": "65", "IN": "91", "AU": "61",
	"NZ": "64", "ZA": "27", "KE": "254",
}

func address(r *rand.Rand, c city) map[string]any {
	return map[string]any{
		"street":     strconv.Itoa(1+r.IntN(400)) + " " + pick(r, streetNames),
		"city":       c.Name,
		"country":    c.Country,
		"postalCode": fmt.Sprintf("%05d", r.IntN(100000)),
	}
}

func (g *gen) genCustomers() error {
	r := g.rng(kCustomer)
	n := g.p.count[kCustomer]
	g.custCreated = make([]int64, n)
	g.custCity = make([]uint8, n)
	b := g.batcher(kCustomer)
	for o := range g.p.orgs {
		org := g.orgs[o]
		for cu := g.p.off[kCustomer][o]; cu < g.p.off[kCustomer][o+1]; cu++ {
			first, last := pick(r, firstNames), pick(r, lastNames)
			stem := pick(r, companyStems)
			company := stem + " " + pick(r, companySuffixes)
			// Customers cluster around their tenant's city.
			ct := org.city
			if chance(r, 0.6) {
				ct = r.IntN(len(cities))
			}
			c := cities[ct]
			g.custCity[cu] = uint8(ct)
			created := after(r, org.created)
			g.custCreated[cu] = created
			tier := wpick(r, 0.45, 0.3, 0.18, 0.07)
			obj := parse.Object{
				"objectId": id(kCustomer, cu), "createdAt": iso(created), "updatedAt": iso(after(r, created)),
				"org": g.orgPtr(o), "name": first + " " + last, "company": company,
				"email":         strings.ToLower(first+"."+last) + "@" + slugify(stem) + ".example.net",
				"phone":         fmt.Sprintf("+%s %03d %04d", dialCodes[c.Country], r.IntN(1000), r.IntN(10000)),
				"address":       address(r, c),
				"location":      geo(r, c, 0.08),
				"tier":          customerTiers[tier],
				"lifetimeValue": round2(float64(tier+1) * 800 * r.ExpFloat64()),
				"active":        chance(r, 0.88),
				"newsletter":    chance(r, 0.4),
				"tags":          pickTags(r, customerTags, r.IntN(3)),
			}
			if chance(r, 0.8) {
				obj["lastContactAt"] = date(after(r, created))
			}
			var am int32 = -1
			if chance(r, 0.6) {
				am = g.user(o, r)
				obj["accountManager"] = userPtr(am)
			}
			switch wpick(r, 0.7, 0.05, 0.15, 0.05, 0.05) {
			case 0:
				setACL(obj, acl([]string{org.role, roleSales, roleAdmin}))
			case 1:
				setACL(obj, acl([]string{org.role, roleSales, roleAdmin}, parse.PublicKey))
			case 2:
				if am < 0 {
					am = g.user(o, r)
				}
				setACL(obj, acl([]string{id(kUser, int(am)), roleSales}))
			case 3:
				// no ACL
			default:
				setACL(obj, map[string]any{})
			}
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

var productBlurbs = []string{
	"Built for teams that work long hours.", "Ships in recyclable packaging.", "Backed by a two-year warranty.",
	"Our most popular choice for small offices.", "Designed with feedback from hundreds of customers.",
	"Pairs well with the rest of the catalog.", "Now with a longer battery life.", "Assembled in under ten minutes.",
}

func (g *gen) genProducts() error {
	r := g.rng(kProduct)
	n := g.p.count[kProduct]
	g.prodName = make([]string, n)
	g.prodSKU = make([]string, n)
	g.prodPrice = make([]float64, n)
	b := g.batcher(kProduct)
	for o := range g.p.orgs {
		org := g.orgs[o]
		for p := g.p.off[kProduct][o]; p < g.p.off[kProduct][o+1]; p++ {
			kind := pick(r, productKinds)
			name := pick(r, productAdjectives) + " " + kind.Noun
			sku := strings.ToUpper(kind.Category[:3]) + "-" + fmt.Sprintf("%06d", p+1)
			price := math.Floor(kind.MinPrice+(kind.MaxPrice-kind.MinPrice)*math.Pow(r.Float64(), 2)) + 0.99
			g.prodName[p], g.prodSKU[p], g.prodPrice[p] = name, sku, price
			// The catalog is mostly built early in a tenant's life.
			created := org.created + int64(float64(endMs-org.created)*math.Pow(r.Float64(), 2))
			stock := 0
			if !chance(r, 0.12) {
				stock = 1 + r.IntN(500)
			}
			obj := parse.Object{
				"objectId": id(kProduct, p), "createdAt": iso(created), "updatedAt": iso(after(r, created)),
				"org": g.orgPtr(o), "name": name, "sku": sku, "category": kind.Category,
				"description": "The " + name + ". " + pick(r, productBlurbs),
				"price":       price, "currency": cities[org.city].Currency,
				"inStock": stock > 0, "stock": float64(stock),
				"tags":       pickTags(r, productTags, r.IntN(3)),
				"launchedAt": date(soon(r, created, 10*dayMs)),
			}
			if kind.Category != "services" && kind.Category != "software" {
				obj["dimensions"] = map[string]any{
					"weightKg": round2(0.1 + 20*math.Pow(r.Float64(), 2)),
					"widthCm":  float64(5 + r.IntN(150)), "heightCm": float64(2 + r.IntN(120)), "depthCm": float64(2 + r.IntN(80)),
				}
			}
			if chance(r, 0.6) {
				obj["image"] = parse.File(hexString(r, 32)+"_"+slugify(name)+".jpg", "")
			}
			switch wpick(r, 0.5, 0.45, 0.05) {
			case 1:
				setACL(obj, acl([]string{roleAdmin}, parse.PublicKey))
			case 2:
				setACL(obj, map[string]any{})
			}
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	return b.flush()
}

// ticketACL is the ACL of a ticket of the given kind (comments reuse it).
func (g *gen) ticketACL(kind aclKind, o int, users ...string) map[string]any {
	role := g.orgs[o].role
	switch kind {
	case aclPublicRead:
		return acl([]string{role, roleAdmin}, parse.PublicKey)
	case aclOrg:
		return acl([]string{role, roleAdmin})
	case aclUser:
		return acl(users)
	case aclRole:
		return acl([]string{roleSupport, roleAdmin})
	case aclMaster:
		return map[string]any{}
	}
	return nil
}

func ticketTitle(r *rand.Rand, typ string) string {
	switch typ {
	case "bug":
		return pick(r, components) + " " + pick(r, problems)
	case "feature":
		return "Add " + pick(r, features) + " to " + strings.ToLower(pick(r, components))
	case "task":
		return pick(r, tasks) + " " + strings.ToLower(pick(r, components))
	}
	return pick(r, questions) + " " + strings.ToLower(pick(r, components)) + "?"
}

func (g *gen) genTickets() error {
	r := g.rng(kTicket)
	n := g.p.count[kTicket]
	g.tickCreated = make([]int64, n)
	g.tickRep = make([]int32, n)
	g.tickAsg = make([]int32, n)
	g.tickKind = make([]aclKind, n)
	fixtureKinds := [fixtureTickets]aclKind{aclNone, aclPublicRead, aclOrg, aclUser, aclRole, aclMaster}
	b := g.batcher(kTicket)
	for o := range g.p.orgs {
		plo, phi := g.p.off[kProject][o], g.p.off[kProject][o+1]
		clo, chi := g.p.off[kCustomer][o], g.p.off[kCustomer][o+1]
		lo, hi := g.p.off[kTicket][o], g.p.off[kTicket][o+1]
		for t := lo; t < hi; t++ {
			fixture := o == 0 && t-lo < fixtureTickets
			proj := plo + skewed(r, phi-plo, 1.5)
			if fixture {
				proj = plo
			}
			g.projSeq[proj]++
			num := g.projSeq[proj]
			created := after(r, g.projCreated[proj])
			typ := ticketTypes[wpick(r, 0.45, 0.25, 0.2, 0.1)]
			var status string
			if endMs-created > 60*dayMs {
				status = []string{"open", "in_progress", "resolved", "closed"}[wpick(r, 0.1, 0.05, 0.25, 0.6)]
			} else {
				status = []string{"open", "in_progress", "resolved", "closed"}[wpick(r, 0.4, 0.3, 0.2, 0.1)]
			}
			priority := 1 + wpick(r, 0.1, 0.25, 0.45, 0.2)
			rep := g.user(o, r)
			asg := int32(-1)
			if status != "open" || chance(r, 0.7) {
				asg = g.user(o, r)
			}
			kind := aclKind(wpick(r, 0.08, 0.10, 0.50, 0.20, 0.08, 0.04))
			if fixture {
				kind = fixtureKinds[t-lo]
				if kind == aclUser {
					rep, asg = 1, 0 // member reported it, admin works on it
				}
			}
			g.tickCreated[t], g.tickRep[t], g.tickAsg[t], g.tickKind[t] = created, rep, asg, kind
			var desc strings.Builder
			for i := range 1 + r.IntN(3) {
				if i > 0 {
					desc.WriteByte(' ')
				}
				desc.WriteString(pick(r, descriptionSentences))
			}
			obj := parse.Object{
				"objectId": id(kTicket, t), "createdAt": iso(created),
				"org": g.orgPtr(o), "project": parse.Pointer(ClassProject, id(kProject, proj)),
				"key": g.projKey[proj] + "-" + strconv.Itoa(int(num)), "number": float64(num),
				"title": ticketTitle(r, typ), "description": desc.String(), "status": status,
				"priority": float64(priority), "type": typ, "tags": pickTags(r, ticketTags, r.IntN(4)),
				"reporter": userPtr(rep), "escalated": priority == 1 && chance(r, 0.4),
			}
			users := []string{id(kUser, int(rep))}
			if asg >= 0 {
				obj["assignee"] = userPtr(asg)
				if asg != rep {
					users = append(users, id(kUser, int(asg)))
				}
			}
			if chance(r, 0.3) {
				obj["customer"] = parse.Pointer(ClassCustomer, id(kCustomer, clo+r.IntN(chi-clo)))
			}
			if chance(r, 0.35) {
				obj["dueDate"] = date(created + (3+r.Int64N(58))*dayMs)
			}
			if chance(r, 0.5) {
				obj["estimateHours"] = float64(pick(r, []int{1, 2, 3, 5, 8, 13, 21}))
			}
			updated := after(r, created)
			if status == "resolved" || status == "closed" {
				resolved := soon(r, created, 6*dayMs)
				obj["resolvedAt"] = date(resolved)
				updated = max(updated, resolved)
			}
			obj["updatedAt"] = iso(updated)
			setACL(obj, g.ticketACL(kind, o, users...))
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	g.projKey, g.projSeq = nil, nil
	return b.flush()
}

func (g *gen) genComments() error {
	r := g.rng(kComment)
	b := g.batcher(kComment)
	for o := range g.p.orgs {
		tlo, thi := g.p.off[kTicket][o], g.p.off[kTicket][o+1]
		for cm := g.p.off[kComment][o]; cm < g.p.off[kComment][o+1]; cm++ {
			t := tlo + skewed(r, thi-tlo, 1.3)
			kind := g.tickKind[t]
			rep, asg := g.tickRep[t], g.tickAsg[t]
			author := rep
			if asg >= 0 && chance(r, 0.5) {
				author = asg
			}
			if kind != aclUser && chance(r, 0.4) {
				author = g.user(o, r)
			}
			created := soon(r, g.tickCreated[t], 3*dayMs)
			var body strings.Builder
			if chance(r, 0.2) {
				body.WriteString("@" + strings.ToLower(pick(r, firstNames)) + " ")
			}
			for i := range 1 + r.IntN(4) {
				if i > 0 {
					body.WriteByte(' ')
				}
				body.WriteString(pick(r, commentSentences))
			}
			edited := chance(r, 0.1)
			updated := created
			if edited {
				updated = soon(r, created, dayMs)
			}
			internal := kind != aclMaster && chance(r, 0.15)
			aid := id(kUser, int(author))
			obj := parse.Object{
				"objectId": id(kComment, cm), "createdAt": iso(created), "updatedAt": iso(updated),
				"org": g.orgPtr(o), "ticket": parse.Pointer(ClassTicket, id(kTicket, t)), "author": userPtr(author),
				"body": body.String(), "internal": internal, "edited": edited,
				"likes": float64(min(int(r.ExpFloat64()*0.8), 12)),
			}
			switch {
			case internal:
				setACL(obj, acl([]string{roleSupport, roleAdmin, aid}))
			case kind == aclUser:
				users := []string{id(kUser, int(rep))}
				if asg >= 0 && asg != rep {
					users = append(users, id(kUser, int(asg)))
				}
				setACL(obj, g.ticketACL(kind, o, users...))
			default:
				setACL(obj, g.ticketACL(kind, o))
			}
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	g.tickCreated, g.tickRep, g.tickAsg, g.tickKind = nil, nil, nil, nil
	return b.flush()
}

func (g *gen) genOrders() error {
	r := g.rng(kOrder)
	b := g.batcher(kOrder)
	statuses := []string{"pending", "paid", "shipped", "delivered", "cancelled", "refunded"}
	for o := range g.p.orgs {
		org := g.orgs[o]
		clo, chi := g.p.off[kCustomer][o], g.p.off[kCustomer][o+1]
		plo, phi := g.p.off[kProduct][o], g.p.off[kProduct][o+1]
		for s := g.p.off[kOrder][o]; s < g.p.off[kOrder][o+1]; s++ {
			cu := clo + skewed(r, chi-clo, 1.5)
			created := after(r, g.custCreated[cu])
			nItems := 1 + min(int(r.ExpFloat64()*1.2), 5)
			items := make([]any, 0, nItems)
			subtotal, count := 0.0, 0
			for range nItems {
				p := plo + r.IntN(phi-plo)
				qty := 1 + min(int(r.ExpFloat64()*1.5), 9)
				items = append(items, map[string]any{
					"product": parse.Pointer(ClassProduct, id(kProduct, p)), "sku": g.prodSKU[p], "name": g.prodName[p],
					"quantity": float64(qty), "unitPrice": g.prodPrice[p],
				})
				subtotal += float64(qty) * g.prodPrice[p]
				count += qty
			}
			subtotal = round2(subtotal)
			tax := round2(subtotal * 0.08)
			var st int
			if age := endMs - created; age > 14*dayMs {
				st = wpick(r, 0.01, 0.02, 0.02, 0.85, 0.06, 0.04)
			} else {
				st = wpick(r, 0.25, 0.3, 0.25, 0.1, 0.07, 0.03)
			}
			status := statuses[st]
			obj := parse.Object{
				"objectId": id(kOrder, s), "createdAt": iso(created),
				"org": g.orgPtr(o), "customer": parse.Pointer(ClassCustomer, id(kCustomer, cu)),
				"number": fmt.Sprintf("SO-%07d", s+1), "status": status,
				"subtotal": subtotal, "tax": tax, "total": round2(subtotal + tax), "currency": cities[org.city].Currency,
				"items": items, "itemCount": float64(count),
				"paid":            status == "paid" || status == "shipped" || status == "delivered" || status == "refunded",
				"shippingAddress": address(r, cities[g.custCity[cu]]),
			}
			updated := created
			if status == "shipped" || status == "delivered" {
				shipped := soon(r, created, 2*dayMs)
				obj["shippedAt"] = date(shipped)
				updated = shipped
				if status == "delivered" {
					delivered := soon(r, shipped, 3*dayMs)
					obj["deliveredAt"] = date(delivered)
					updated = delivered
				}
			} else if status != "pending" {
				updated = soon(r, created, 5*dayMs)
			}
			obj["updatedAt"] = iso(updated)
			var rep int32 = -1
			if chance(r, 0.5) {
				rep = g.user(o, r)
				obj["salesRep"] = userPtr(rep)
			}
			if chance(r, 0.15) {
				obj["notes"] = pick(r, orderNotes)
			}
			switch wpick(r, 0.8, 0.12, 0.05, 0.03) {
			case 0:
				setACL(obj, acl([]string{roleSales, roleAdmin}, org.role))
			case 1:
				if rep < 0 {
					rep = g.user(o, r)
				}
				setACL(obj, acl([]string{id(kUser, int(rep)), roleSales}))
			case 2:
				setACL(obj, map[string]any{})
			}
			if err := b.add(obj); err != nil {
				return err
			}
		}
	}
	return b.flush()
}
