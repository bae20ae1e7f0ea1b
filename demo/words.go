package demo

// The built-in word lists the generator draws names and text from. They are
// part of the dataset: changing them changes the data (bump Version).

var firstNames = []string{
	"Olivia", "Liam", "Emma", "Noah", "Amelia", "Oliver", "Ava", "Elijah", "Sophia", "Lucas",
	"Mia", "Mateo", "Isabella", "Levi", "Charlotte", "Ethan", "Harper", "James", "Evelyn", "Leo",
	"Aisha", "Omar", "Priya", "Arjun", "Mei", "Hiroshi", "Yuki", "Chen", "Fatima", "Kwame",
	"Ingrid", "Lars", "Sofia", "Marco", "Lucia", "Pablo", "Camille", "Hugo", "Greta", "Jonas",
	"Nadia", "Ivan", "Zara", "Malik", "Anika", "Tomas", "Elena", "Diego", "Hannah", "Samuel",
	"Grace", "Daniel", "Chloe", "Rafael", "Maya", "Felix", "Nora", "Adrian", "Leila", "Victor",
}

var lastNames = []string{
	"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
	"Hernandez", "Lopez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee",
	"Patel", "Nguyen", "Kim", "Tanaka", "Suzuki", "Wang", "Li", "Singh", "Khan", "Okafor",
	"Mensah", "Muller", "Schmidt", "Fischer", "Rossi", "Bianchi", "Dubois", "Moreau", "Silva", "Santos",
	"Kowalski", "Novak", "Jensen", "Larsen", "Andersson", "Virtanen", "Murphy", "Kelly", "Walsh", "OBrien",
	"Cohen", "Levi", "Haddad", "Rahman", "Costa", "Ferreira", "Ivanov", "Petrov", "Yilmaz", "Demir",
}

// Company names are a stem and a suffix ("Northwind Logistics").
var companyStems = []string{
	"Northwind", "Bluefin", "Silverline", "Redwood", "Brightpath", "Ironbridge", "Clearwater", "Summit",
	"Pinecrest", "Lakeside", "Goldleaf", "Starlight", "Evergreen", "Highland", "Riverbend", "Oakridge",
	"Suncrest", "Harborview", "Maplewood", "Cedar Point", "Blackstone", "Greenfield", "Westbrook", "Eastgate",
	"Falcon", "Orion", "Vertex", "Nimbus", "Quantum", "Helix", "Atlas", "Beacon",
	"Cobalt", "Crescent", "Granite", "Horizon", "Juniper", "Keystone", "Lumen", "Meridian",
}

var companySuffixes = []string{
	"Labs", "Systems", "Logistics", "Health", "Analytics", "Foods", "Energy", "Retail",
	"Media", "Software", "Consulting", "Manufacturing", "Travel", "Finance", "Robotics", "Studios",
}

type city struct {
	Name, Country, Currency, Timezone, Locale string
	Lat, Lng                                  float64
}

var cities = []city{
	{"New York", "US", "USD", "America/New_York", "en-US", 40.7128, -74.0060},
	{"San Francisco", "US", "USD", "America/Los_Angeles", "en-US", 37.7749, -122.4194},
	{"Chicago", "US", "USD", "America/Chicago", "en-US", 41.8781, -87.6298},
	{"Austin", "US", "USD", "America/Chicago", "en-US", 30.2672, -97.7431},
	{"Seattle", "US", "USD", "America/Los_Angeles", "en-US", 47.6062, -122.3321},
	{"Boston", "US", "USD", "America/New_York", "en-US", 42.3601, -71.0589},
	{"Toronto", "CA", "CAD", "America/Toronto", "en-CA", 43.6532, -79.3832},
	{"Vancouver", "CA", "CAD", "America/Vancouver", "en-CA", 49.2827, -123.1207},
	{"Mexico City", "MX", "MXN", "America/Mexico_City", "es-MX", 19.4326, -99.1332},
	{"São Paulo", "BR", "BRL", "America/Sao_Paulo", "pt-BR", -23.5505, -46.6333},
	{"London", "GB", "GBP", "Europe/London", "en-GB", 51.5074, -0.1278},
	{"Manchester", "GB", "GBP", "Europe/London", "en-GB", 53.4808, -2.2426},
	{"Dublin", "IE", "EUR", "Europe/Dublin", "en-IE", 53.3498, -6.2603},
	{"Paris", "FR", "EUR", "Europe/Paris", "fr-FR", 48.8566, 2.3522},
	{"Lyon", "FR", "EUR", "Europe/Paris", "fr-FR", 45.7640, 4.8357},
	{"Berlin", "DE", "EUR", "Europe/Berlin", "de-DE", 52.5200, 13.4050},
	{"Munich", "DE", "EUR", "Europe/Berlin", "de-DE", 48.1351, 11.5820},
	{"Amsterdam", "NL", "EUR", "Europe/Amsterdam", "nl-NL", 52.3676, 4.9041},
	{"Madrid", "ES", "EUR", "Europe/Madrid", "es-ES", 40.4168, -3.7038},
	{"Barcelona", "ES", "EUR", "Europe/Madrid", "es-ES", 41.3851, 2.1734},
	{"Milan", "IT", "EUR", "Europe/Rome", "it-IT", 45.4642, 9.1900},
	{"Stockholm", "SE", "SEK", "Europe/Stockholm", "sv-SE", 59.3293, 18.0686},
	{"Warsaw", "PL", "PLN", "Europe/Warsaw", "pl-PL", 52.2297, 21.0122},
	{"Zurich", "CH", "CHF", "Europe/Zurich", "de-CH", 47.3769, 8.5417},
	{"Tokyo", "JP", "JPY", "Asia/Tokyo", "ja-JP", 35.6762, 139.6503},
	{"Singapore", "SG", "SGD", "Asia/Singapore", "en-SG", 1.3521, 103.8198},
	{"Bangalore", "IN", "INR", "Asia/Kolkata", "en-IN", 12.9716, 77.5946},
	{"Sydney", "AU", "AUD", "Australia/Sydney", "en-AU", -33.8688, 151.2093},
	{"Melbourne", "AU", "AUD", "Australia/Melbourne", "en-AU", -37.8136, 144.9631},
	{"Auckland", "NZ", "NZD", "Pacific/Auckland", "en-NZ", -36.8485, 174.7633},
	{"Cape Town", "ZA", "ZAR", "Africa/Johannesburg", "en-ZA", -33.9249, 18.4241},
	{"Nairobi", "KE", "KES", "Africa/Nairobi", "en-KE", -1.2921, 36.8219},
}

var streetNames = []string{
	"Main Street", "Oak Avenue", "Maple Drive", "Park Road", "Station Road", "High Street", "Market Street",
	"Church Lane", "Harbour Way", "Mill Lane", "King Street", "Queen Street", "Elm Street", "River Road",
	"Hill Crescent", "Bridge Street", "Victoria Road", "Garden Walk", "Lake View", "Industrial Parkway",
}

var projectNames = []string{
	"Website Redesign", "Mobile App v2", "Customer Portal", "Billing Revamp", "SSO Integration",
	"Data Warehouse Migration", "Onboarding Flow", "Search Relaunch", "Payments Platform", "Analytics Dashboard",
	"Inventory Sync", "Partner API", "Support Chatbot", "Checkout Optimization", "Email Campaigns",
	"Kubernetes Migration", "Accessibility Audit", "Localization", "Reporting Suite", "Loyalty Program",
	"Marketplace Launch", "Security Hardening", "Design System", "Warehouse Scanner App", "Pricing Experiments",
	"Mobile Offline Mode", "GDPR Compliance", "Observability", "Field Service App", "Subscription Management",
}

var projectStatuses = []string{"planning", "active", "on_hold", "completed"}

var projectTags = []string{
	"web", "mobile", "backend", "infra", "data", "design", "compliance", "growth", "internal", "customer-facing",
}

var colors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

var components = []string{
	"Login page", "Checkout", "Invoice PDF", "Search", "Mobile app", "Dashboard", "Public API", "Email notifications",
	"CSV export", "Billing settings", "Password reset", "User profile", "Admin console", "Report builder",
	"File upload", "Calendar view", "Push notifications", "Order history", "Shopping cart", "Webhooks",
	"Single sign-on", "Team invitations", "Audit log", "Data import", "Product catalog",
}

var problems = []string{
	"is slow to load", "crashes on submit", "shows wrong totals", "returns a 500 error", "times out for large accounts",
	"ignores the timezone setting", "displays garbled characters", "loses unsaved changes", "fails on Safari",
	"sends duplicate emails", "rounds amounts incorrectly", "hangs after the last release", "shows stale data",
	"rejects valid input", "breaks on small screens", "logs users out unexpectedly",
}

var features = []string{
	"dark mode", "bulk editing", "keyboard shortcuts", "two-factor authentication", "an export to Excel",
	"saved filters", "custom fields", "Slack notifications", "a Spanish translation", "recurring schedules",
	"role-based access", "an audit trail", "inline comments", "drag-and-drop sorting", "usage analytics",
}

var tasks = []string{
	"Upgrade dependencies for", "Write documentation for", "Add integration tests for", "Clean up feature flags in",
	"Review the permissions of", "Migrate the database tables of", "Improve logging in", "Load test",
}

var questions = []string{
	"How do I configure", "Is there a limit on", "Can we get a walkthrough of", "Why did the behaviour change in",
	"Who owns", "What is the roadmap for",
}

var ticketTypes = []string{"bug", "feature", "task", "question"}

var ticketTags = []string{
	"bug", "frontend", "backend", "mobile", "billing", "performance", "security", "ux", "api", "docs",
	"regression", "customer-reported", "urgent", "infra", "data", "good-first-issue",
}

var descriptionSentences = []string{
	"Reported by a customer through the support portal.",
	"Steps to reproduce are attached; it happens every time on staging.",
	"Started after the last release, so it is probably a regression.",
	"Only accounts with more than a few thousand records seem to be affected.",
	"Happens in Chrome and Safari but not in Firefox.",
	"The error log shows a timeout talking to the payments provider.",
	"Several customers asked about this in the last week.",
	"We should agree on the expected behaviour before changing anything.",
	"Marketing would like this done before the next campaign.",
	"A workaround exists, but it is tedious for large teams.",
	"The design mockups are linked in the project folder.",
	"This blocks the enterprise rollout planned for next month.",
	"Please keep backwards compatibility with the v1 endpoints.",
	"The numbers do not match what finance sees in the ledger.",
	"Low priority, but it keeps coming up in user interviews.",
	"Needs a migration for existing data.",
}

var commentSentences = []string{
	"I can reproduce this on staging.",
	"Could not reproduce on my machine; can you share the exact steps?",
	"Deployed a fix to staging, please verify.",
	"Looks good to me, closing once QA signs off.",
	"This is related to the caching change we shipped last sprint.",
	"Adding the customer to cc, they reported the same thing yesterday.",
	"I think the root cause is a race between the two background jobs.",
	"Raised the priority because two enterprise accounts are affected.",
	"The logs show the request hitting the old endpoint.",
	"Moving this to the next sprint, we ran out of capacity.",
	"Attached a screenshot of what I see.",
	"Confirmed fixed in production.",
	"We need input from the design team before going further.",
	"Rolled back the last deploy while we investigate.",
	"Added a regression test so this does not come back.",
	"The customer confirmed the workaround helps for now.",
	"Pinging the on-call engineer.",
	"This duplicates an older ticket; linking them.",
	"Estimated at about two days of work including tests.",
	"Updated the documentation to mention the new limit.",
	"Thanks for the quick turnaround!",
	"Reopening: the issue is back after the latest release.",
	"Checked with finance, the corrected totals match now.",
	"The fix is behind a feature flag until Monday.",
}

var customerTags = []string{"vip", "newsletter", "wholesale", "reseller", "trial", "churn-risk", "referral", "partner"}

var customerTiers = []string{"bronze", "silver", "gold", "platinum"}

var productAdjectives = []string{
	"Ergonomic", "Wireless", "Compact", "Premium", "Smart", "Portable", "Heavy-Duty", "Eco", "Ultra", "Classic",
	"Modular", "Rugged", "Adjustable", "Solar", "Digital",
}

type productKind struct {
	Noun, Category string
	MinPrice       float64
	MaxPrice       float64
}

var productKinds = []productKind{
	{"Desk Chair", "furniture", 89, 699}, {"Standing Desk", "furniture", 249, 1299}, {"Monitor Arm", "accessories", 29, 189},
	{"Keyboard", "accessories", 19, 249}, {"Mouse", "accessories", 9, 129}, {"Headset", "audio", 29, 399},
	{"Speaker", "audio", 39, 599}, {"Webcam", "electronics", 29, 249}, {"Laptop Stand", "accessories", 19, 149},
	{"Router", "electronics", 49, 449}, {"Backpack", "bags", 39, 249}, {"Water Bottle", "outdoor", 9, 49},
	{"Tent", "outdoor", 79, 899}, {"Lamp", "home", 19, 299}, {"Coffee Grinder", "kitchen", 29, 399},
	{"Blender", "kitchen", 39, 499}, {"Fitness Tracker", "electronics", 39, 349}, {"Power Bank", "electronics", 15, 129},
	{"Support Plan", "services", 99, 2499}, {"Analytics License", "software", 49, 4999},
}

var productTags = []string{"bestseller", "new", "sale", "limited", "eco-friendly", "bundle", "refurbished", "gift"}

var orderNotes = []string{
	"Leave at the front desk.", "Please deliver after 5pm.", "Gift wrap, no invoice in the box.",
	"Call before delivery.", "Use the loading dock entrance.", "Split shipment is fine.",
}

var orgFeatures = []string{"sso", "audit_log", "api_access", "custom_roles", "data_export", "sandbox", "priority_support"}
