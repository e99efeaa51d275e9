package manifest

import "time"

// Account is a service account both deploy paths create; Key names it in Roles and Terraform,
// ID is before Terraform's name_prefix.
type Account struct {
	Key, ID, DisplayName string
}

// Accounts are the deployment's identities (docs/operations.md, "Identities"), in creation order.
func Accounts() []Account {
	return []Account{
		{Key: "runtime", ID: "counters-runtime", DisplayName: "Distributed counters: functions at runtime"},
		{Key: "trigger", ID: "counters-trigger", DisplayName: "Distributed counters: Eventarc and Pub/Sub push deliveries"},
		{Key: "build", ID: "counters-build", DisplayName: "Distributed counters: builds of the functions"},
	}
}

// Repository is the Artifact Registry repository of the functions' images, in the region; ID is
// before Terraform's name_prefix.
var Repository = struct{ ID, Description string }{"counters-functions", "Distributed counters: the functions' images"}

// Role is a role an Account gets on the project, or on the functions' Artifact Registry repository
// when OnRepository.
type Role struct {
	Account, Role string
	// Setting, if set, is the boolean setting that must be on; deploy.sh --remove revokes it anyway.
	Setting      string
	Condition    *Condition
	OnRepository bool
}

// Condition limits a Role to the resource Resource and what it holds. Resource may hold the
// placeholders {project}, {database}, {project_number} and {region}.
type Condition struct {
	Title, Resource string
}

// Expression is c as an IAM condition expression.
func (c Condition) Expression() string {
	return `resource.name == "` + c.Resource + `" || resource.name.startsWith("` + c.Resource + `/")`
}

// Placeholders are the names a Condition's Resource may hold.
var Placeholders = []string{"{project}", "{database}", "{project_number}", "{region}"}

// Roles are the accounts' roles, in grant order.
func Roles() []Role {
	return []Role{
		{Account: "runtime", Role: "roles/datastore.user",
			Condition: &Condition{Title: "counters-database-only", Resource: "projects/{project}/databases/{database}"}},
		// firebaseauth.users.get
		{Account: "runtime", Role: "roles/firebaseauth.viewer", Setting: "CHECK_REVOKED_TOKENS"},
		// firebaseappcheck.appCheckTokens.verify
		{Account: "runtime", Role: "roles/firebaseappcheck.tokenVerifier", Setting: "APP_CHECK_REPLAY_PROTECTION"},
		// Eventarc's deliveries; roles/run.invoker is granted per function.
		{Account: "trigger", Role: "roles/eventarc.eventReceiver"},
		// Google's list for a custom build account: the build's logs.
		{Account: "build", Role: "roles/logging.logWriter"},
		// Cloud Functions' source bucket of the region, created on the first deploy, holds the upload.
		{Account: "build", Role: "roles/storage.objectAdmin",
			Condition: &Condition{Title: "counters-build-sources-only", Resource: "projects/_/buckets/gcf-v2-sources-{project_number}-{region}"}},
		{Account: "build", Role: "roles/artifactregistry.writer", OnRepository: true},
	}
}

// API is a Google API the deploy paths enable.
type API struct {
	Name    string
	Setting string // enabled only when this boolean setting is on
	// Rules: deploy.sh enables it only with --replace-rules, Terraform always.
	Rules bool
	// TerraformOnly: for the module's own source bucket.
	TerraformOnly bool
}

// APIs are the APIs to enable, in order.
func APIs() []API {
	var apis []API
	for _, name := range []string{"cloudfunctions", "run", "cloudbuild", "artifactregistry", "eventarc", "pubsub",
		"cloudscheduler", "firestore", "logging", "iam", "monitoring"} {
		apis = append(apis, API{Name: name + ".googleapis.com"})
	}
	return append(apis, API{Name: "storage.googleapis.com", TerraformOnly: true},
		API{Name: "firebaserules.googleapis.com", Rules: true},
		API{Name: "firebaseappcheck.googleapis.com", Setting: "APP_CHECK_REPLAY_PROTECTION"})
}

// InvokerRole lets a member call a function (a 2nd gen function is a Cloud Run service).
const InvokerRole = "roles/run.invoker"

// Invoker is who holds InvokerRole on a function, and no one else: an Account, by key, or the list
// the deployer gives: "admin" (deploy.sh --admin-invoker, Terraform admin_invokers) or "http"
// (--invoker, http_invokers). A PublicOnRequest function adds allUsers when asked to.
type Invoker struct{ Account, List string }

// Invoker is f's: the trigger account for an event function (Eventarc and Pub/Sub push deliver as
// it), the admin list for an admin function, else the http list.
func (f Function) Invoker() Invoker {
	switch {
	case f.Trigger.EventType != "":
		return Invoker{Account: "trigger"}
	case f.Admin:
		return Invoker{List: "admin"}
	}
	return Invoker{List: "http"}
}

// DeadLetters is how a function's dead-letter topic gets and keeps what Pub/Sub parks
// (docs/operations.md, "Dead letters"): Agent, Pub/Sub's service agent ({project_number} a
// placeholder), gets TopicRole on the topic and SubscriptionRole on the function's subscription; the
// pull subscription named after the topic keeps the messages for Retention, whole days, and gives a
// reader AckDeadline, whole seconds, to handle one.
var DeadLetters = struct {
	Agent, TopicRole, SubscriptionRole string
	Retention, AckDeadline             time.Duration
}{"service-{project_number}@gcp-sa-pubsub.iam.gserviceaccount.com", "roles/pubsub.publisher", "roles/pubsub.subscriber", 7 * 24 * time.Hour, time.Minute}
