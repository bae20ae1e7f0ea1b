package demo

import "github.com/parsemcp/parsemcp/parse"

func ptr(class string) parse.Field { return parse.Field{Type: parse.TypePointer, TargetClass: class} }

var (
	tString  = parse.Field{Type: parse.TypeString}
	tNumber  = parse.Field{Type: parse.TypeNumber}
	tBool    = parse.Field{Type: parse.TypeBoolean}
	tDate    = parse.Field{Type: parse.TypeDate}
	tObject  = parse.Field{Type: parse.TypeObject}
	tArray   = parse.Field{Type: parse.TypeArray}
	tFile    = parse.Field{Type: parse.TypeFile}
	tGeo     = parse.Field{Type: parse.TypeGeoPoint}
	tOrgPtr  = ptr(ClassOrganization)
	tUserPtr = ptr(parse.ClassUser)
)

func newSchema(class string, fields map[string]parse.Field) parse.Schema {
	s := parse.NewSchema(class)
	for k, f := range fields {
		s.Fields[k] = f
	}
	return s
}

// entries returns an OpPerm admitting the given ACL entries (none: master
// key only).
func entries(keys ...string) *parse.OpPerm {
	p := &parse.OpPerm{Entries: map[string]bool{}}
	for _, k := range keys {
		p.Entries[k] = true
	}
	return p
}

var (
	roleAdmin   = parse.RoleEntry(RoleAdmin)
	roleManager = parse.RoleEntry(RoleManager)
	roleSupport = parse.RoleEntry(RoleSupport)
	roleSales   = parse.RoleEntry(RoleSales)
)

// schemas returns the user classes Generate creates, in creation order.
func schemas() []parse.Schema {
	org := newSchema(ClassOrganization, map[string]parse.Field{
		"name": {Type: parse.TypeString, Required: true}, "slug": tString, "domain": tString, "plan": tString,
		"seats": tNumber, "active": tBool, "settings": tObject, "owner": tUserPtr, "headquarters": tGeo,
		"trialEndsAt": tDate,
	})
	org.CLP = parse.CLP{Create: entries(roleAdmin), Update: entries(roleAdmin), Delete: entries(roleAdmin), AddField: entries()}
	org.Indexes = map[string]map[string]int{"organization_slug_1": {"slug": 1}}

	project := newSchema(ClassProject, map[string]parse.Field{
		"org": tOrgPtr, "name": {Type: parse.TypeString, Required: true}, "key": tString, "description": tString,
		"status": tString, "owner": tUserPtr, "members": {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
		"budget": tNumber, "archived": tBool, "startDate": tDate, "dueDate": tDate, "tags": tArray,
		"logo": tFile, "color": tString,
	})
	project.CLP = parse.CLP{
		AddField:        entries(),
		ProtectedFields: map[string][]string{parse.PublicKey: {"budget"}, roleManager: {}, roleAdmin: {}},
	}

	ticket := newSchema(ClassTicket, map[string]parse.Field{
		"org": tOrgPtr, "project": ptr(ClassProject), "key": tString, "number": tNumber,
		"title": {Type: parse.TypeString, Required: true}, "description": tString, "status": tString,
		"priority": tNumber, "type": tString, "tags": tArray, "reporter": tUserPtr, "assignee": tUserPtr,
		"customer": ptr(ClassCustomer), "dueDate": tDate, "resolvedAt": tDate, "estimateHours": tNumber,
		"escalated": tBool,
	})
	ticket.CLP = parse.CLP{Delete: entries(roleAdmin, roleManager), AddField: entries()}
	ticket.Indexes = map[string]map[string]int{"ticket_status_1": {"status": 1}}

	comment := newSchema(ClassComment, map[string]parse.Field{
		"org": tOrgPtr, "ticket": ptr(ClassTicket), "author": tUserPtr, "body": tString,
		"internal": tBool, "edited": tBool, "likes": tNumber,
	})
	comment.CLP = parse.CLP{Create: &parse.OpPerm{Entries: map[string]bool{}, RequiresAuthentication: true}, AddField: entries()}

	customer := newSchema(ClassCustomer, map[string]parse.Field{
		"org": tOrgPtr, "name": {Type: parse.TypeString, Required: true}, "company": tString, "email": tString,
		"phone": tString, "address": tObject, "location": tGeo, "tier": tString, "lifetimeValue": tNumber,
		"active": tBool, "newsletter": tBool, "tags": tArray, "lastContactAt": tDate, "accountManager": tUserPtr,
	})
	auth := func() *parse.OpPerm { return &parse.OpPerm{Entries: map[string]bool{}, RequiresAuthentication: true} }
	customer.CLP = parse.CLP{
		Get: auth(), Find: auth(), Count: auth(), AddField: entries(),
		ProtectedFields: map[string][]string{parse.PublicKey: {"email", "phone"}, roleSales: {}, roleAdmin: {}},
	}

	product := newSchema(ClassProduct, map[string]parse.Field{
		"org": tOrgPtr, "name": {Type: parse.TypeString, Required: true}, "sku": tString, "category": tString,
		"description": tString, "price": tNumber, "currency": tString, "inStock": tBool, "stock": tNumber,
		"dimensions": tObject, "tags": tArray, "image": tFile, "launchedAt": tDate,
	})
	product.CLP = parse.CLP{Create: entries(roleAdmin), Update: entries(roleAdmin), Delete: entries(roleAdmin), AddField: entries()}

	order := newSchema(ClassOrder, map[string]parse.Field{
		"org": tOrgPtr, "customer": ptr(ClassCustomer), "number": tString, "status": tString,
		"subtotal": tNumber, "tax": tNumber, "total": tNumber, "currency": tString, "items": tArray,
		"itemCount": tNumber, "paid": tBool, "shippedAt": tDate, "deliveredAt": tDate,
		"shippingAddress": tObject, "salesRep": tUserPtr, "notes": tString,
	})
	readers := func() *parse.OpPerm { return entries(roleAdmin, roleManager, roleSales) }
	order.CLP = parse.CLP{
		Get: readers(), Find: readers(), Count: readers(),
		Create: entries(roleAdmin, roleSales), Update: entries(roleAdmin, roleSales), Delete: entries(roleAdmin),
		AddField: entries(),
	}
	order.Indexes = map[string]map[string]int{"order_status_1": {"status": 1}}

	out := []parse.Schema{org, project, ticket, comment, customer, product, order}
	for i := range out {
		out[i].CLP = out[i].CLP.Completed() // the demo means public where it names no operation
	}
	return out
}
