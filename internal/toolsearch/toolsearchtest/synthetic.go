package toolsearchtest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/toolsearch"
)

// domain is a service with the things it keeps: one server of the
// synthetic catalog.
type domain struct {
	id, service string // server id; the service in words
	scope       string // the parameter that says where things are (project, account…)
	things      []thing
}

// thing is a kind of record a service keeps.
type thing struct {
	id, one, many string // identifier; singular and plural in words
	gloss         string // what it is, in other words
	fields        string // comma-separated field names it has
}

// domains are the 40 services of the synthetic catalog, 5 kinds of record
// each; with 5 actions per kind that is 1,000 tools.
var domains = []domain{
	{"tracker", "the issue tracker", "project", []thing{
		{"issue", "issue", "issues", "a bug, task or feature request someone reported", "title,body,assignee,labels"},
		{"milestone", "milestone", "milestones", "a release target grouping issues with a due date", "title,due_date"},
		{"comment", "comment", "comments", "a reply posted in an issue's discussion", "issue_id,body"},
		{"label", "label", "labels", "a coloured tag used to categorise issues", "name,color"},
		{"sprint", "sprint", "sprints", "a time-boxed iteration of planned work", "name,start_date,end_date"}}},
	{"git", "the code hosting service", "repository", []thing{
		{"pull_request", "pull request", "pull requests", "a proposed change to merge from one branch into another, for review", "title,head,base"},
		{"branch", "branch", "branches", "a line of development of the code", "name,from"},
		{"commit", "commit", "commits", "a recorded change to the source code with its author and message", "sha,message"},
		{"release", "release", "releases", "a tagged, published version with notes and downloads", "tag,notes"},
		{"webhook", "webhook", "webhooks", "a callback URL notified when repository events happen", "url,events"}}},
	{"ci", "the continuous integration service", "pipeline", []thing{
		{"build", "build", "builds", "a run of the pipeline that compiles and tests the code", "ref,status"},
		{"job", "job", "jobs", "one step of a build, with its log output", "build_id,status"},
		{"artifact", "artifact", "artifacts", "a file a build produced, such as a binary or test report", "build_id,path"},
		{"schedule", "schedule", "schedules", "a cron timetable that starts builds automatically", "cron,ref"},
		{"secret", "secret", "secrets", "an encrypted variable builds can read, such as a deploy key", "name,value"}}},
	{"chat", "the team chat", "workspace", []thing{
		{"message", "message", "messages", "a text posted in a channel or conversation", "channel,text"},
		{"channel", "channel", "channels", "a room where members talk about a topic", "name,topic,private"},
		{"reaction", "reaction", "reactions", "an emoji response added to a message", "message_id,emoji"},
		{"reminder", "reminder", "reminders", "a note the chat bot will nudge you about at a set time", "text,time"},
		{"user_group", "user group", "user groups", "a named set of members that can be mentioned together", "handle,members"}}},
	{"mail", "the email service", "mailbox", []thing{
		{"email", "email", "emails", "a mail message with sender, recipients, subject and body", "to,subject,body"},
		{"draft", "draft", "drafts", "an unsent email being written", "to,subject,body"},
		{"folder", "mail folder", "mail folders", "a folder that sorts received mail", "name,parent"},
		{"filter", "mail filter", "mail filters", "a rule that sorts or deletes incoming mail automatically", "criteria,action"},
		{"contact", "mail contact", "mail contacts", "an address book entry with name and email address", "name,email"}}},
	{"calendar", "the calendar", "calendar", []thing{
		{"event", "event", "events", "a meeting or appointment with a start and end time", "title,start,end,attendees"},
		{"invitation", "invitation", "invitations", "a request for someone to attend a meeting, with their reply", "event_id,email,response"},
		{"room", "meeting room", "meeting rooms", "a bookable physical room with a capacity", "name,capacity"},
		{"availability", "availability window", "availability windows", "free and busy time of a person", "person,from,to"},
		{"holiday", "holiday", "holidays", "a public or company day off", "date,name"}}},
	{"docs", "the document editor", "drive", []thing{
		{"document", "document", "documents", "a rich text document such as a report or memo", "title,content"},
		{"spreadsheet", "spreadsheet", "spreadsheets", "a grid of cells with rows, columns and formulas", "title,sheets"},
		{"presentation", "presentation", "presentations", "a slide deck", "title,slides"},
		{"share", "share", "shares", "a permission that lets someone view or edit a file", "file_id,email,role"},
		{"revision", "revision", "revisions", "an earlier saved version of a file", "file_id,time"}}},
	{"crm", "the customer relationship manager", "account", []thing{
		{"lead", "lead", "leads", "a potential customer not yet qualified", "name,company,source"},
		{"deal", "deal", "deals", "a sales opportunity with an amount and a stage in the pipeline", "name,amount,stage"},
		{"customer", "customer", "customers", "a company or person that buys from us", "name,industry"},
		{"note", "customer note", "customer notes", "a remark logged about a customer conversation", "customer_id,text"},
		{"quote", "sales quote", "sales quotes", "a priced offer sent to a prospect", "deal_id,amount"}}},
	{"billing", "the billing system", "customer", []thing{
		{"invoice", "invoice", "invoices", "a bill sent to a customer asking for payment", "amount,due_date,currency"},
		{"subscription", "subscription", "subscriptions", "a recurring plan a customer pays for monthly or yearly", "plan,interval"},
		{"refund", "refund", "refunds", "money returned to a customer for a charge", "charge_id,amount,reason"},
		{"coupon", "coupon", "coupons", "a discount code that lowers a price", "code,percent_off"},
		{"payment_method", "payment method", "payment methods", "a card or bank account used to pay", "type,last4"}}},
	{"shop", "the online store", "store", []thing{
		{"product", "product", "products", "an item for sale with a price and stock", "name,price,sku"},
		{"order", "order", "orders", "a purchase a shopper placed, with items and shipping address", "items,address"},
		{"cart", "shopping cart", "shopping carts", "the items a shopper picked but has not bought yet", "items"},
		{"review", "product review", "product reviews", "a rating and opinion a buyer wrote about an item", "product_id,rating,text"},
		{"category", "product category", "product categories", "a section of the catalog grouping similar items", "name,parent"}}},
	{"warehouse", "the warehouse system", "site", []thing{
		{"stock", "stock level", "stock levels", "how many units of an item are on hand", "sku,quantity"},
		{"shipment", "shipment", "shipments", "a parcel sent out with a carrier and tracking number", "order_id,carrier,tracking"},
		{"supplier", "supplier", "suppliers", "a vendor that delivers goods to us", "name,country"},
		{"purchase_order", "purchase order", "purchase orders", "an order we place with a supplier to restock", "supplier_id,items"},
		{"bin", "storage bin", "storage bins", "a shelf location where goods are kept", "aisle,shelf"}}},
	{"hr", "the human resources system", "company", []thing{
		{"employee", "employee", "employees", "a person who works for the company, with role and manager", "name,role,manager"},
		{"time_off", "time-off request", "time-off requests", "a request for vacation, leave or sick days", "employee_id,from,to"},
		{"payslip", "payslip", "payslips", "a statement of salary paid for a month", "employee_id,month"},
		{"position", "job opening", "job openings", "a vacancy the company is hiring for", "title,department"},
		{"candidate", "candidate", "candidates", "an applicant for a job with their resume", "name,position_id"}}},
	{"cloud", "the cloud provider", "region", []thing{
		{"instance", "virtual machine", "virtual machines", "a compute server instance running in the cloud", "type,image"},
		{"bucket", "storage bucket", "storage buckets", "object storage holding uploaded blobs", "name,public"},
		{"volume", "disk volume", "disk volumes", "a block storage disk attached to a server", "size_gb,instance_id"},
		{"snapshot", "disk snapshot", "disk snapshots", "a point-in-time backup copy of a disk", "volume_id"},
		{"firewall_rule", "firewall rule", "firewall rules", "a rule that opens or blocks network ports", "port,cidr,action"}}},
	{"k8s", "the Kubernetes cluster", "namespace", []thing{
		{"pod", "pod", "pods", "a group of running containers", "name,image"},
		{"deployment", "deployment", "deployments", "a workload that keeps a number of replicas of a container running", "name,replicas,image"},
		{"service", "service", "services", "a stable network endpoint load balancing to pods", "name,port"},
		{"configmap", "config map", "config maps", "key-value configuration mounted into containers", "name,data"},
		{"cronjob", "cron job", "cron jobs", "a container task run on a timetable", "name,schedule"}}},
	{"dns", "the DNS provider", "zone", []thing{
		{"record", "DNS record", "DNS records", "an A, CNAME, MX or TXT entry that points a host name somewhere", "name,type,value,ttl"},
		{"domain", "domain name", "domain names", "a registered internet domain", "name,expires"},
		{"certificate", "TLS certificate", "TLS certificates", "an HTTPS certificate for a host name", "hostname"},
		{"redirect", "URL redirect", "URL redirects", "a rule forwarding one address to another", "from,to"},
		{"nameserver", "nameserver", "nameservers", "a server that answers DNS queries for a zone", "host"}}},
	{"monitor", "the monitoring service", "environment", []thing{
		{"alert", "alert", "alerts", "a notification that a metric crossed a threshold", "metric,threshold"},
		{"dashboard", "monitoring dashboard", "monitoring dashboards", "a page of graphs of metrics", "title,panels"},
		{"check", "uptime check", "uptime checks", "a probe that pings a URL to see whether the site is up", "url,interval"},
		{"incident", "incident", "incidents", "an outage being handled by the on-call team", "title,severity"},
		{"oncall", "on-call shift", "on-call shifts", "who is paged for emergencies and when", "person,from,to"}}},
	{"logs", "the log search service", "index", []thing{
		{"entry", "log entry", "log entries", "a line an application wrote to its logs, with level and timestamp", "level,message"},
		{"saved_search", "saved log search", "saved log searches", "a stored log query to run again", "name,query"},
		{"retention", "retention policy", "retention policies", "how long logs are kept before deletion", "days"},
		{"pipeline", "log pipeline", "log pipelines", "processing rules that parse and enrich incoming logs", "name,rules"},
		{"archive", "log archive", "log archives", "old logs moved to cheap storage", "from,to"}}},
	{"db", "the database server", "database", []thing{
		{"table", "table", "tables", "a database table with columns and rows", "name,columns"},
		{"index", "table index", "table indexes", "an index that speeds up queries on columns", "table,columns"},
		{"backup", "database backup", "database backups", "a dump of the database to restore later", "database"},
		{"user", "database user", "database users", "an account that can log in to the database with privileges", "name,privileges"},
		{"migration", "schema migration", "schema migrations", "a versioned change to the database schema", "version,sql"}}},
	{"analytics", "the product analytics service", "app", []thing{
		{"report", "analytics report", "analytics reports", "a chart of visitors, page views or conversions over time", "metric,from,to"},
		{"funnel", "conversion funnel", "conversion funnels", "the steps users take towards signing up or buying, with drop-off", "steps"},
		{"segment", "audience segment", "audience segments", "a group of users defined by their behaviour", "name,rules"},
		{"goal", "goal", "goals", "a target action counted as a conversion", "name,event"},
		{"experiment", "A/B test", "A/B tests", "an experiment comparing two variants of a page", "name,variants"}}},
	{"ads", "the advertising platform", "ad_account", []thing{
		{"campaign", "ad campaign", "ad campaigns", "a set of ads with a budget and schedule", "name,budget"},
		{"ad", "ad", "ads", "a creative with text and image shown to people", "headline,image"},
		{"audience", "ad audience", "ad audiences", "people targeted by age, place and interests", "name,criteria"},
		{"keyword", "keyword", "keywords", "a search term ads bid on", "text,bid"},
		{"budget", "ad budget", "ad budgets", "the money an account may spend per day", "daily_amount"}}},
	{"social", "the social media account", "profile", []thing{
		{"post", "post", "posts", "a status update published to followers", "text,media"},
		{"follower", "follower", "followers", "someone who follows the account", "handle"},
		{"scheduled_post", "scheduled post", "scheduled posts", "a post queued to publish later", "text,publish_at"},
		{"mention", "mention", "mentions", "a post by someone else that tags the account", "since"},
		{"direct_message", "direct message", "direct messages", "a private message between two accounts", "to,text"}}},
	{"cms", "the website content manager", "site", []thing{
		{"page", "web page", "web pages", "a page of the website with its content and URL", "title,slug,body"},
		{"blog_post", "blog post", "blog posts", "an article published on the blog", "title,body,author"},
		{"media", "media file", "media files", "an image or video uploaded to the site library", "filename,alt_text"},
		{"menu", "navigation menu", "navigation menus", "the links at the top of the website", "items"},
		{"form_submission", "form submission", "form submissions", "what a visitor sent through a contact form", "form,fields"}}},
	{"support", "the customer support desk", "helpdesk", []thing{
		{"ticket", "support ticket", "support tickets", "a customer's request for help and its replies", "subject,requester,priority"},
		{"macro", "canned reply", "canned replies", "a saved answer agents paste into tickets", "title,text"},
		{"article", "help center article", "help center articles", "a self-service FAQ answer", "title,body"},
		{"satisfaction", "satisfaction rating", "satisfaction ratings", "a customer's score of how the help went", "ticket_id,score"},
		{"sla", "service level policy", "service level policies", "how fast tickets must be answered", "priority,hours"}}},
	{"files", "the cloud file storage", "drive", []thing{
		{"file", "stored file", "stored files", "an uploaded file kept in the cloud drive", "name,parent"},
		{"share_link", "share link", "share links", "a public link to download a file", "file_id,expires"},
		{"trash", "trashed file", "trashed files", "a deleted file that can still be restored", "file_id"},
		{"quota", "storage quota", "storage quotas", "how much space a user may use", "user,bytes"},
		{"sync_device", "synced device", "synced devices", "a computer that keeps a local copy of the drive", "name"}}},
	{"auth", "the identity provider", "tenant", []thing{
		{"account", "user account", "user accounts", "a person's login with email and password", "email,name"},
		{"role", "role", "roles", "a set of permissions granted to users", "name,permissions"},
		{"api_key", "API key", "API keys", "a token programs use to authenticate", "name,scopes"},
		{"session", "login session", "login sessions", "a signed-in browser or device", "user_id"},
		{"mfa_device", "two-factor device", "two-factor devices", "an authenticator app or security key for multi-factor sign-in", "user_id,type"}}},
	{"maps", "the maps service", "region", []thing{
		{"place", "place", "places", "a business or landmark with address and opening hours", "name,address"},
		{"route", "route", "routes", "driving, walking or transit directions between two points", "origin,destination,mode"},
		{"geocode", "geocode", "geocodes", "coordinates (latitude and longitude) of an address", "address"},
		{"saved_place", "saved place", "saved places", "a favourite location bookmarked by a user", "name,lat,lng"},
		{"traffic_report", "traffic report", "traffic reports", "congestion and road closures on a road", "road"}}},
	{"weather", "the weather service", "location", []thing{
		{"forecast", "forecast", "forecasts", "expected temperature, rain and wind for the coming days", "days"},
		{"observation", "current conditions report", "current conditions reports", "the temperature and sky right now", "station"},
		{"warning", "severe weather warning", "severe weather warnings", "an official alert for storms, floods or heat", "severity"},
		{"air_quality", "air quality reading", "air quality readings", "pollution and pollen levels", "pollutant"},
		{"station", "weather station", "weather stations", "a sensor site reporting measurements", "name,elevation"}}},
	{"travel", "the travel booking service", "trip", []thing{
		{"flight", "flight booking", "flight bookings", "a reserved seat on a plane between airports", "from,to,date"},
		{"hotel", "hotel reservation", "hotel reservations", "a booked room for some nights", "city,check_in,check_out"},
		{"car_rental", "car rental", "car rentals", "a hired vehicle to pick up and return", "pickup,dropoff"},
		{"itinerary", "itinerary", "itineraries", "the plan of a whole journey day by day", "days"},
		{"expense", "travel expense", "travel expenses", "a receipt to be reimbursed after a trip", "amount,receipt"}}},
	{"finance", "the accounting ledger", "company", []thing{
		{"transaction", "bank transaction", "bank transactions", "money in or out of a bank account", "amount,date,description"},
		{"budget_line", "budget line", "budget lines", "planned spending for a department", "department,amount"},
		{"vendor_bill", "vendor bill", "vendor bills", "a bill we owe a supplier, to pay", "vendor,amount,due_date"},
		{"tax_rate", "tax rate", "tax rates", "a VAT or sales tax percentage", "name,percent"},
		{"balance_sheet", "balance sheet", "balance sheets", "assets and liabilities at a date", "date"}}},
	{"notes", "the note-taking app", "notebook", []thing{
		{"note", "note", "notes", "a short piece of text someone jotted down", "title,text"},
		{"todo", "to-do item", "to-do items", "a task on a checklist to tick off", "text,due"},
		{"tag", "note tag", "note tags", "a keyword that groups notes", "name"},
		{"attachment", "note attachment", "note attachments", "a file attached to a note", "note_id,file"},
		{"template", "note template", "note templates", "a reusable outline for new notes", "name,body"}}},
	{"music", "the music streaming service", "library", []thing{
		{"playlist", "playlist", "playlists", "an ordered list of songs", "name,tracks"},
		{"track", "song", "songs", "a piece of music by an artist", "title,artist"},
		{"album", "album", "albums", "a record with a list of songs", "title,artist"},
		{"queue", "play queue", "play queues", "the songs that play next", "tracks"},
		{"device", "speaker", "speakers", "a device that can play the music", "name"}}},
	{"video", "the video platform", "channel", []thing{
		{"video", "video", "videos", "an uploaded clip with title and description", "title,file"},
		{"caption", "caption track", "caption tracks", "subtitles in a language for a video", "video_id,language"},
		{"livestream", "live stream", "live streams", "a broadcast happening in real time", "title,start"},
		{"thumbnail", "thumbnail", "thumbnails", "the preview image of a video", "video_id,image"},
		{"viewer_comment", "viewer comment", "viewer comments", "what viewers wrote under a video", "video_id,text"}}},
	{"iot", "the smart home hub", "home", []thing{
		{"light", "light", "lights", "a smart bulb that can be switched and dimmed", "name,brightness"},
		{"thermostat", "thermostat", "thermostats", "the heating and cooling setpoint temperature", "setpoint"},
		{"lock", "door lock", "door locks", "a smart lock on a door", "name,locked"},
		{"camera", "security camera", "security cameras", "a camera recording the house", "name,recording"},
		{"automation", "home automation", "home automations", "a rule like turn on lights at sunset", "trigger,action"}}},
	{"lms", "the learning platform", "school", []thing{
		{"course", "course", "courses", "a class with lessons and a teacher", "title,teacher"},
		{"assignment", "assignment", "assignments", "homework students hand in by a deadline", "course_id,due"},
		{"grade", "grade", "grades", "a student's mark for an assignment", "student_id,score"},
		{"enrollment", "enrollment", "enrollments", "a student registered in a class", "student_id,course_id"},
		{"quiz", "quiz", "quizzes", "a short test with questions and answers", "course_id,questions"}}},
	{"health", "the clinic system", "clinic", []thing{
		{"patient", "patient", "patients", "a person receiving care, with their medical record", "name,birth_date"},
		{"appointment", "doctor appointment", "doctor appointments", "a visit booked with a doctor", "patient_id,doctor,time"},
		{"prescription", "prescription", "prescriptions", "medicine a doctor ordered, with dose", "patient_id,drug,dose"},
		{"lab_result", "lab result", "lab results", "blood test and other test results", "patient_id,test"},
		{"insurance_claim", "insurance claim", "insurance claims", "a request for the insurer to pay for care", "patient_id,amount"}}},
	{"realestate", "the property listing service", "market", []thing{
		{"listing", "property listing", "property listings", "a house or apartment for sale or rent", "address,price,bedrooms"},
		{"viewing", "property viewing", "property viewings", "a visit to see a home", "listing_id,time"},
		{"offer", "purchase offer", "purchase offers", "a bid to buy a home", "listing_id,amount"},
		{"agent", "estate agent", "estate agents", "a realtor who sells homes", "name,phone"},
		{"valuation", "home valuation", "home valuations", "an estimate of what a property is worth", "address"}}},
	{"legal", "the contract manager", "organization", []thing{
		{"contract", "contract", "contracts", "an agreement with terms, parties and renewal date", "parties,terms"},
		{"signature", "signature request", "signature requests", "a document sent to be e-signed", "document_id,signer"},
		{"clause", "clause", "clauses", "a reusable paragraph of legal text", "title,text"},
		{"matter", "legal matter", "legal matters", "a case the legal team is working on", "title,client"},
		{"nda", "non-disclosure agreement", "non-disclosure agreements", "an NDA keeping information confidential", "party"}}},
	{"translate", "the translation service", "project", []thing{
		{"translation", "translation", "translations", "a text turned into another language", "text,source_lang,target_lang"},
		{"glossary", "glossary", "glossaries", "terms that must be translated a fixed way", "name,terms"},
		{"language", "language", "languages", "a language the service can translate to and from", "code"},
		{"job", "translation job", "translation jobs", "a batch of documents sent for translation", "files,target_lang"},
		{"memory", "translation memory", "translation memories", "earlier translated sentences reused for consistency", "name"}}},
	{"security", "the vulnerability scanner", "organization", []thing{
		{"vulnerability", "vulnerability", "vulnerabilities", "a security flaw (CVE) found in a dependency or host", "cve,severity"},
		{"scan", "security scan", "security scans", "a run that looks for weaknesses in code or hosts", "target"},
		{"policy", "security policy", "security policies", "rules that say which findings block a release", "name,rules"},
		{"exception", "risk exception", "risk exceptions", "an accepted risk that silences a finding", "finding_id,reason"},
		{"sbom", "software bill of materials", "software bills of materials", "the list of packages a build contains", "artifact"}}},
	{"survey", "the survey tool", "workspace", []thing{
		{"survey", "survey", "surveys", "a questionnaire sent to people", "title,questions"},
		{"response", "survey response", "survey responses", "the answers one person gave", "survey_id"},
		{"question", "survey question", "survey questions", "one question with its answer choices", "survey_id,text,choices"},
		{"respondent", "respondent", "respondents", "someone invited to answer", "email"},
		{"result_export", "results export", "results exports", "answers downloaded as CSV", "survey_id,format"}}},
}

// actions are what each kind of record can have done to it: the verb of
// the tool name, its title, and the sentence that starts its description.
var actions = []struct {
	verb, title, lead string
	plural, byID      bool
	fields            bool
}{
	{"list", "List", "Lists (shows, browses) the %s in a %s of %s, newest first, with paging and filters.", true, false, false},
	{"get", "Get", "Gets (looks up, fetches) the details of one %s of %s by its id.", false, true, false},
	{"create", "Create", "Creates (adds, opens) a new %s in %s.", false, false, true},
	{"update", "Update", "Updates (edits, changes) an existing %s of %s.", false, true, true},
	{"delete", "Delete", "Deletes (removes) a %s from %s for good.", false, true, false},
}

// Synthetic is the synthetic catalog: 40 services × 5 kinds of record ×
// 5 actions = 1,000 tools, the same on every call. Tool names are
// verb_thing (list_issue), agent names domain__verb_thing.
func Synthetic() []toolsearch.Tool {
	var out []toolsearch.Tool
	for _, d := range domains {
		for _, th := range d.things {
			for _, a := range actions {
				out = append(out, synthTool(d, th, a.verb, a.title, a.lead, a.plural, a.byID, a.fields))
			}
		}
	}
	return out
}

func synthTool(d domain, th thing, verb, title, lead string, plural, byID, withFields bool) toolsearch.Tool {
	name := verb + "_" + th.id
	var desc string
	if plural {
		desc = fmt.Sprintf(lead, th.many, d.scope, d.service)
	} else {
		desc = fmt.Sprintf(lead, th.one, d.service)
	}
	desc += fmt.Sprintf(" A %s is %s.", th.one, th.gloss)
	opts := []mcp.ToolOption{
		mcp.WithToolTitle(title + " " + titleCase(th.many)),
		mcp.WithDescription(desc),
		mcp.WithString(d.scope, mcp.Required(), mcp.Description(fmt.Sprintf("The %s in %s.", strings.ReplaceAll(d.scope, "_", " "), d.service))),
	}
	if byID {
		opts = append(opts, mcp.WithString(th.id+"_id", mcp.Required(), mcp.Description(fmt.Sprintf("Id of the %s.", th.one))))
	}
	if plural {
		opts = append(opts,
			mcp.WithInteger("page_size", mcp.Description("How many to return per page.")),
			mcp.WithString("cursor", mcp.Description("Where the previous page ended.")))
	}
	if withFields {
		for _, f := range strings.Split(th.fields, ",") {
			opts = append(opts, mcp.WithString(f, mcp.Description(fmt.Sprintf("The %s of the %s.", strings.ReplaceAll(f, "_", " "), th.one))))
		}
	}
	t := mcp.NewTool(name, opts...)
	schema, _ := json.Marshal(t.InputSchema)
	raw, _ := json.Marshal(t)
	return offered(d.id, listedTool{Name: name, Title: t.Title, Description: desc, InputSchema: schema}, raw)
}

// titleCase capitalises the first letter of each word.
func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}
