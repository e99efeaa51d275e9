#!/usr/bin/env bash
# Deploys the distributed counters into one Google Cloud project with gcloud: the Firestore database
# settings (TTL, single-field indexes), the Pub/Sub topics, the Cloud Scheduler job, the service
# accounts and their roles, and every function (2nd gen, one `gcloud functions deploy` per entry
# point), and the log-based metrics, SLOs, alert policies and dashboard of scripts/monitoring/. Every step
# is idempotent: run it again to update. See docs/operations.md.
#
# What it deploys (functions, triggers, limits, topics, settings, field settings, accounts, roles,
# invokers, dead letters, APIs) is declared in Go (internal/manifest, functions/config) and read from deployment.gen.sh, which
# `go generate ./...` writes.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/deploy.sh [options]

  --project ID              project (default: $GOOGLE_CLOUD_PROJECT)
  --region REGION           region of the functions, topics' triggers and the scheduler job
                            (default: $GOOGLE_CLOUD_REGION)
  --database ID             Firestore database (default: $FIRESTORE_DATABASE or "(default)")
  --database-location LOC   location of the Firestore database, e.g. nam5 or us-central1: the
                            Firestore trigger must be there (default: $FIRESTORE_LOCATION, else the
                            existing database's location, else --region)
  --env NAME=VALUE          set one of the functions' settings (repeatable): --list-env names
                            them, docs/settings.md says what each means
  --invoker MEMBER          let MEMBER (e.g. serviceAccount:backend@p.iam.gserviceaccount.com)
                            invoke Increment, Count and Top (repeatable). The list is authoritative:
                            members no longer given lose roles/run.invoker there
  --admin-invoker MEMBER    let MEMBER invoke ConfigureCounter, which creates, resets and deletes
                            counters (repeatable; authoritative like --invoker)
  --allow-unauthenticated-increments
                            make Increment public (allUsers may invoke it). Off by default: read
                            docs/operations.md, "Public increments", first. allUsers and
                            allAuthenticatedUsers are refused as --invoker and --admin-invoker
  --max-delivery-attempts N deliveries of an increment message before it is parked in the
                            dead-letter topic (5..100, default 10)
  --dead-letter-only        only park the increments that keep failing: attach the dead-letter topic
                            to the subscription Eventarc made for increment-from-pubsub
  --opt-in NAME             also deploy the opt-in function NAME (repeatable), e.g.
                            fold-extension-shards, which folds the firestore-counter extension's
                            shards (docs/migrate-from-firestore-counter.md)
  --replace-rules FILE      replace the database's whole security ruleset with FILE: your app's
                            rules with the counters' block added (make rules APP_RULES=...), or
                            firestore.rules for a database of its own. Without it the database's
                            rules are left as they are, and the script says what to add. With
                            --remove: your app's own rules, without the counters' block
  --remove                  delete what the deploy created instead (the functions, the scheduler
                            job, the topics and subscription, the composite indexes, the field
                            settings, the service accounts and their roles, the metrics, alert
                            policies and dashboard); give it the --env
                            collection names and --database the deploy had. It never deletes the
                            database, documents, or anything else of the project. With --dry-run,
                            print the commands (docs/existing-app.md, "Remove everything again")
  --page-channel CHANNEL    send the alerts that page (outages, burning SLOs) to CHANNEL, a
                            notification channel's name (projects/P/notificationChannels/ID;
                            repeatable; authoritative: an update removes channels no longer given)
  --ticket-channel CHANNEL  send the alerts that open a ticket (dead letters, unfinished sweeps,
                            slow budget burn) to CHANNEL (as --page-channel)
  --alert-threshold KEY=VALUE
                            override an alert policy's threshold (repeatable; sweep_absent's is
                            whole minutes without a sweep, 2 to 1410); the keys, defaults and
                            units: docs/operations.md, "Monitoring"
  --dry-run                 print every command, one per line, and run nothing

The collection counters declared in $COUNTER_SOURCES (--env COUNTER_SOURCES=FILE; default
counter-sources.json, relative to the repository root) get one function each
per document pattern; a declaration file that cannot work stops the deploy before anything is
deployed. Functions of patterns no longer declared are deleted (docs/operations.md, "Deploying
collection counters").
  --list-env                print the names of the environment variables the functions can be given
  --version                 print the release this script deploys (every function is labelled
                            counters_version=v<major>-<minor>-<patch>)
  -h, --help                this help
EOF
}

# shellcheck source=scripts/deployment.gen.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/deployment.gen.sh"

# The first line of the counters' block in a ruleset that holds it (rules.Marker, written by make rules).
readonly RULES_MARKER='// BEGIN distributed-counters rules'
# Where the script was started: --replace-rules FILE is relative to it.
readonly START_DIR=$PWD

PROJECT=${GOOGLE_CLOUD_PROJECT:-}
REGION=${GOOGLE_CLOUD_REGION:-}
DATABASE=${FIRESTORE_DATABASE:-(default)}
DATABASE_LOCATION=${FIRESTORE_LOCATION:-}
DRY_RUN=false
DEAD_LETTER_ONLY=false
REPLACE_RULES=
REMOVE=false
RULES_TMP=
OPT_IN=()
MAX_DELIVERY_ATTEMPTS=10
PUBLIC_INCREMENTS=false
INVOKERS=()
ADMIN_INVOKERS=()
declare -A ENV_VALUES=()
# Each service account's email, by key (SERVICE_ACCOUNTS).
declare -A ACCOUNT=()
# The functions of the counter sources (load_sources): FUNCTIONS rows, and each one's base name.
SOURCE_ROWS=()
SOURCE_NAMES=()
declare -A SOURCE_BASE=()
# COUNTER_SOURCES for the deployed functions: the declarations, inline (one line of JSON).
SOURCES_PATH=
declare -A CHANNELS=([page]='' [ticket]='')
declare -A ALERT_THRESHOLDS=()

die() {
  echo "deploy.sh: $*" >&2
  exit 2
}

# quote prints its arguments as one shell command line, quoting only the words that need it.
quote() {
  local out=() word
  for word in "$@"; do
    if [[ $word =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
      out+=("$word")
    else
      out+=("'${word//\'/\'\\\'\'}'")
    fi
  done
  printf '%s\n' "${out[*]}"
}

# run prints the command; unless this is a dry run, it then runs it.
run() {
  if $DRY_RUN; then
    quote "$@"
  else
    quote "$@" | sed 's/^/+ /' >&2
    "$@"
  fi
}

# missing succeeds when the resource the describe command names does not exist, and fails when it
# does. Any other failure of the command (no permission, an API not enabled, a network error) stops
# the deploy with its message. A dry run assumes a fresh project, so that it prints every command
# that creates something.
missing() {
  $DRY_RUN && return 0
  local err
  if err=$("$@" 2>&1 >/dev/null); then return 1; fi
  if [[ $err == *NOT_FOUND* || $err == *"not found"* || $err == *"does not exist"* ]]; then return 0; fi
  die "$(quote "$@") failed: $err"
}

# create_if_absent runs a command that creates something, as run does; an answer that it already
# exists is success, and any other failure stops the deploy with its message.
create_if_absent() {
  if $DRY_RUN; then
    quote "$@"
    return
  fi
  quote "$@" | sed 's/^/+ /' >&2
  local err
  if err=$("$@" 2>&1 >/dev/null); then return 0; fi
  if [[ $err == *ALREADY_EXISTS* || $err == *"already exists"* ]]; then return 0; fi
  die "$(quote "$@") failed: $err"
}

# lookup VAR COMMAND... sets VAR to what COMMAND prints, for later commands. A dry run prints the
# command instead and sets VAR to its own name, which stands in for the answer in the listing.
lookup() {
  local -n answer=$1
  shift
  if $DRY_RUN; then
    printf '# %s is what the next command prints\n' "${!answer}"
    quote "$@"
    answer=${!answer}
    return
  fi
  answer=$("$@")
}

# note prints a comment: to stderr normally, as a "#" line in a dry run's listing.
note() {
  if $DRY_RUN; then printf '# %s\n' "$*"; else printf '%s\n' "$*" >&2; fi
}

# warn prints a warning to stderr, in a dry run too.
warn() {
  printf 'deploy.sh: WARNING: %s\n' "$*" >&2
}

# check_member refuses a public member in an invoker list: only --allow-unauthenticated-increments
# opens a function to everyone.
check_member() {
  case $2 in
  allUsers | allAuthenticatedUsers)
    die "$1 $2: public members are refused; --allow-unauthenticated-increments opens Increment alone (docs/operations.md, \"Public increments\")"
    ;;
  esac
}

in_list() {
  local want=$1 item
  shift
  for item in "$@"; do [[ $item == "$want" ]] && return 0; done
  return 1
}

parse_flags() {
  while (($#)); do
    case $1 in
    --project) PROJECT=${2:?--project needs a value} && shift ;;
    --region) REGION=${2:?--region needs a value} && shift ;;
    --database) DATABASE=${2:?--database needs a value} && shift ;;
    --database-location) DATABASE_LOCATION=${2:?--database-location needs a value} && shift ;;
    --env)
      local pair=${2:?--env needs NAME=VALUE} name value
      name=${pair%%=*} value=${pair#*=}
      [[ $pair == *=* ]] || die "--env $pair: expected NAME=VALUE"
      in_list "$name" "${ENV_NAMES[@]}" || die "--env $name: unknown; known: ${ENV_NAMES[*]}"
      ENV_VALUES[$name]=$value
      shift
      ;;
    --invoker) check_member --invoker "${2:?--invoker needs a member}" && INVOKERS+=("$2") && shift ;;
    --admin-invoker) check_member --admin-invoker "${2:?--admin-invoker needs a member}" && ADMIN_INVOKERS+=("$2") && shift ;;
    --allow-unauthenticated-increments) PUBLIC_INCREMENTS=true ;;
    --dead-letter-only) DEAD_LETTER_ONLY=true ;;
    --max-delivery-attempts) MAX_DELIVERY_ATTEMPTS=${2:?--max-delivery-attempts needs a number} && shift ;;
    --opt-in)
      local wanted=${2:?--opt-in needs a function name}
      in_list "$wanted" "${OPT_IN_NAMES[@]}" || die "--opt-in $wanted: not an opt-in function; opt-in: ${OPT_IN_NAMES[*]}"
      OPT_IN+=("$wanted")
      shift
      ;;
    --replace-rules)
      REPLACE_RULES=${2:?--replace-rules needs a rules file} && shift
      [[ $REPLACE_RULES == /* ]] || REPLACE_RULES="$START_DIR/$REPLACE_RULES"
      [[ -r $REPLACE_RULES ]] || die "--replace-rules $REPLACE_RULES: cannot read it"
      ;;
    --remove) REMOVE=true ;;
    --page-channel | --ticket-channel)
      local class=${1#--} && class=${class%-channel}
      [[ ${2:-} =~ ^projects/[^/]+/notificationChannels/[^/,]+$ ]] ||
        die "$1 ${2:-}: give the channel's name, projects/PROJECT/notificationChannels/ID (gcloud alpha monitoring channels list)"
      CHANNELS[$class]+=${CHANNELS[$class]:+,}$2
      shift
      ;;
    --alert-threshold)
      local alert=${2:?--alert-threshold needs KEY=VALUE}
      [[ -r scripts/monitoring/policies/${alert%%=*}.json && ${alert%%=*} =~ ^[a-z0-9_]+$ ]] ||
        die "--alert-threshold ${alert%%=*}: no such alert; known: $(alert_keys)"
      [[ ${alert#*=} =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--alert-threshold $alert: the threshold must be a number"
      absence_policy "scripts/monitoring/policies/${alert%%=*}.json" || [[ $(<"scripts/monitoring/policies/${alert%%=*}.json") == *'"thresholdValue":'* ]] ||
        die "--alert-threshold ${alert%%=*}: it fires on every matching log entry and has no threshold"
      if absence_policy "scripts/monitoring/policies/${alert%%=*}.json" &&
        ! { [[ ${alert#*=} =~ ^[0-9]{1,4}$ ]] && ((10#${alert#*=} >= 2 && 10#${alert#*=} <= 1410)); }; then
        die "--alert-threshold $alert: ${alert%%=*} counts minutes without data: give a whole number of minutes from 2 to 1410 (23.5 hours), the metric-absence durations Cloud Monitoring takes"
      fi
      ALERT_THRESHOLDS[${alert%%=*}]=${alert#*=}
      shift
      ;;
    --dry-run) DRY_RUN=true ;;
    --list-env)
      printf '%s\n' "${ENV_OF_OPTION[project]}" "${ENV_OF_OPTION[database]}" "${ENV_NAMES[@]}"
      exit 0
      ;;
    --version) echo "$VERSION" && exit 0 ;;
    -h | --help) usage && exit 0 ;;
    *) usage >&2 && die "unknown argument: $1" ;;
    esac
    shift
  done
  [[ -n $PROJECT ]] || die "no project: pass --project or set GOOGLE_CLOUD_PROJECT"
  [[ -n $REGION ]] || die "no region: pass --region or set GOOGLE_CLOUD_REGION"
  if [[ -z ${ENV_VALUES[COUNTER_SOURCES]:-} && -n ${COUNTER_SOURCES:-} ]]; then ENV_VALUES[COUNTER_SOURCES]=$COUNTER_SOURCES; fi
  [[ -n $REPLACE_RULES ]] || return 0
  if $REMOVE; then
    ! grep -qF -- "$RULES_MARKER" "$REPLACE_RULES" ||
      die "--remove --replace-rules $REPLACE_RULES: it still holds the counters' block ($RULES_MARKER): pass your app's own rules (make rules APP_RULES=<file> REMOVE=1 takes the block out)"
  else
    grep -qF -- "$RULES_MARKER" "$REPLACE_RULES" ||
      die "--replace-rules $REPLACE_RULES: it holds no counters' block ($RULES_MARKER): write it with make rules APP_RULES=<your app's rules>, or pass firestore.rules for a database of its own"
  fi
}

# setting prints the value given with --env NAME=..., or the setting's default.
setting() {
  printf '%s\n' "${ENV_VALUES[$1]:-${ENV_DEFAULTS[$1]}}"
}

# function_row NAME prints the FUNCTIONS row of the function NAME.
function_row() {
  local row
  for row in "${FUNCTIONS[@]}"; do
    [[ $row == "$1 "* ]] && printf '%s\n' "$row" && return
  done
  die "no function $1 in deployment.gen.sh"
}

# go_runtime prints the Cloud Functions runtime matching go.mod's go line: "go 1.26.0" is go126.
go_runtime() {
  local version
  version=$(awk '$1 == "go" { print $2; exit }' go.mod)
  [[ $version =~ ^1\.([0-9]+) ]] || die "go.mod: cannot read the go line (got '$version')"
  printf 'go1%s\n' "${BASH_REMATCH[1]}"
}

enable_apis() {
  local row api needs rules apis=()
  for row in "${APIS[@]}"; do
    read -r api needs rules <<<"$row"
    if [[ $needs != - ]] && ! is_true "$(setting "$needs")"; then continue; fi
    if $rules && [[ -z $REPLACE_RULES ]]; then continue; fi
    apis+=("$api")
  done
  run gcloud services enable --project="$PROJECT" "${apis[@]}"
}

ensure_database() {
  if [[ -z $DATABASE_LOCATION ]] && ! $DRY_RUN &&
    ! missing gcloud firestore databases describe --project="$PROJECT" --database="$DATABASE"; then
    DATABASE_LOCATION=$(gcloud firestore databases describe --project="$PROJECT" --database="$DATABASE" \
      --format='value(locationId)')
  fi
  if [[ -z $DATABASE_LOCATION ]]; then
    DATABASE_LOCATION=$REGION
    note "database location: $DATABASE_LOCATION (the region; pass --database-location if the database is elsewhere)"
  fi
  if missing gcloud firestore databases describe --project="$PROJECT" --database="$DATABASE"; then
    run gcloud firestore databases create --project="$PROJECT" --database="$DATABASE" \
      --location="$DATABASE_LOCATION" --type=firestore-native
  fi
}

# grant_project_role ACCOUNT ROLE [CONDITION] grants ROLE on the project, under the IAM condition
# CONDITION (gcloud's expression=...,title=... form) if given.
grant_project_role() {
  run gcloud projects add-iam-policy-binding "$PROJECT" --member="serviceAccount:$1" --role="$2" \
    --condition="${3:-None}" --quiet
}

# each_role ON CALLBACK calls CALLBACK ACCOUNT ROLE [CONDITION] for every role of ROLES on ON
# (project or repository) whose setting is on; --remove takes them all.
each_role() {
  local row key role on needs title expression PROJECT_NUMBER=
  for row in "${ROLES[@]}"; do
    read -r key role on needs title expression <<<"$row"
    [[ $on == "$1" ]] || continue
    if [[ $needs != - ]] && ! $REMOVE && ! is_true "$(setting "$needs")"; then continue; fi
    if [[ $title == - ]]; then
      "$2" "${ACCOUNT[$key]}" "$role"
      continue
    fi
    if [[ $expression == *'{project_number}'* && -z $PROJECT_NUMBER ]]; then
      lookup PROJECT_NUMBER gcloud projects describe "$PROJECT" --format='value(projectNumber)'
    fi
    expression=${expression//'{project}'/$PROJECT}
    expression=${expression//'{database}'/$DATABASE}
    expression=${expression//'{project_number}'/$PROJECT_NUMBER}
    "$2" "${ACCOUNT[$key]}" "$role" "expression=${expression//'{region}'/$REGION},title=$title"
  done
}

ensure_identities() {
  local row key id name
  for row in "${SERVICE_ACCOUNTS[@]}"; do
    read -r key id name <<<"$row"
    if missing gcloud iam service-accounts describe "${ACCOUNT[$key]}" --project="$PROJECT"; then
      run gcloud iam service-accounts create "$id" --project="$PROJECT" --display-name="$name"
    fi
  done
  each_role project grant_project_role
}

# ensure_repository creates the functions' Docker repository unless it exists, and lets the build
# account write to it, and to no other repository.
ensure_repository() {
  local repo=("$REPOSITORY" --project="$PROJECT" --location="$REGION")
  if missing gcloud artifacts repositories describe "${repo[@]}"; then
    run gcloud artifacts repositories create "${repo[@]}" --repository-format=docker \
      --description="$REPOSITORY_DESCRIPTION"
  fi
  each_role repository grant_repository_role
}

# grant_repository_role ACCOUNT ROLE grants ROLE on the functions' repository.
grant_repository_role() {
  run gcloud artifacts repositories add-iam-policy-binding "$REPOSITORY" --project="$PROJECT" --location="$REGION" \
    --member="serviceAccount:$1" --role="$2"
}

ensure_topics() {
  local topic
  for topic in "${TOPICS[@]}"; do
    if missing gcloud pubsub topics describe "$topic" --project="$PROJECT"; then
      run gcloud pubsub topics create "$topic" --project="$PROJECT"
    fi
  done
  # A topic keeps nothing by itself: a pull subscription named after each dead-letter topic holds
  # the parked messages for inspection.
  each_function ensure_dead_letter_subscription
}

# ensure_dead_letter_subscription creates the subscription of a function's dead-letter topic.
ensure_dead_letter_subscription() {
  local dead_letter=$7
  [[ $dead_letter != - ]] || return 0
  if missing gcloud pubsub subscriptions describe "$dead_letter" --project="$PROJECT"; then
    run gcloud pubsub subscriptions create "$dead_letter" --project="$PROJECT" \
      --topic="$dead_letter" --message-retention-duration="$DEAD_LETTER_RETENTION" \
      --ack-deadline="$DEAD_LETTER_ACK_DEADLINE" --expiration-period=never
  fi
}

# each_function CALLBACK calls CALLBACK with the columns of every FUNCTIONS row that is deployed (an
# opt-in function only when --opt-in names it), then of every SOURCE_ROWS row, in order: name, entry point, event type, topic,
# document pattern, retry, dead-letter topic, memory, vCPU, concurrency, timeout, max instances,
# public on request, invoker, document pattern from root, opt-in.
each_function() {
  local row columns
  for row in "${FUNCTIONS[@]}" "${SOURCE_ROWS[@]}"; do
    read -r -a columns <<<"$row"
    if ${columns[15]} && ! in_list "${columns[0]}" "${OPT_IN[@]}"; then continue; fi
    "$1" "${columns[@]}"
  done
}

# opt_in_names prints the names of the opt-in functions.
opt_in_names() {
  local row columns
  for row in "${FUNCTIONS[@]}"; do
    read -r -a columns <<<"$row"
    if ${columns[15]}; then printf '%s\n' "${columns[0]}"; fi
  done
}
mapfile -t OPT_IN_NAMES < <(opt_in_names)
readonly OPT_IN_NAMES

# attach_dead_letter makes Pub/Sub park a message of a function with a dead-letter topic after
# MAX_DELIVERY_ATTEMPTS failed deliveries. Eventarc made the push subscription of the function's
# trigger, so the policy goes on that subscription, and Pub/Sub's service agent needs to read it and
# publish to the topic.
attach_dead_letter() {
  local name=$1 dead_letter=$7 TRIGGER SUBSCRIPTION PROJECT_NUMBER agent
  [[ $dead_letter != - ]] || return 0
  lookup TRIGGER gcloud functions describe "$name" --project="$PROJECT" --region="$REGION" \
    --format='value(eventTrigger.trigger)'
  lookup SUBSCRIPTION gcloud eventarc triggers describe "$TRIGGER" --project="$PROJECT" --location="$REGION" \
    --format='value(transport.pubsub.subscription)'
  lookup PROJECT_NUMBER gcloud projects describe "$PROJECT" --format='value(projectNumber)'
  agent="serviceAccount:${PUBSUB_AGENT//'{project_number}'/$PROJECT_NUMBER}"
  run gcloud pubsub topics add-iam-policy-binding "$dead_letter" --project="$PROJECT" \
    --member="$agent" --role="$DEAD_LETTER_TOPIC_ROLE"
  run gcloud pubsub subscriptions add-iam-policy-binding "$SUBSCRIPTION" --project="$PROJECT" \
    --member="$agent" --role="$DEAD_LETTER_SUBSCRIPTION_ROLE"
  run gcloud pubsub subscriptions update "$SUBSCRIPTION" --project="$PROJECT" \
    --dead-letter-topic="projects/$PROJECT/topics/$dead_letter" --max-delivery-attempts="$MAX_DELIVERY_ATTEMPTS"
}

# check_ttl_collections refuses a TTL policy on a collection group whose ID does not contain
# "counter": a TTL policy applies to every collection of that ID in the database, an app's included.
check_ttl_collections() {
  local row collection ttl
  for row in "${FIELD_SETTINGS[@]}"; do
    read -r collection _ ttl _ <<<"$row"
    $ttl || continue
    if [[ -v ENV_DEFAULTS[$collection] ]]; then collection=$(setting "$collection"); fi
    [[ $collection == *counter* ]] || die "collection $collection gets a TTL policy, so its ID must contain" \
      "\"counter\": the policy would also delete an app's own documents in collections of that ID"
  done
}

# ORIGIN_PATTERN is one web origin as browsers send it, scheme://host[:port]: what the functions'
# ALLOWED_ORIGINS check accepts (functions/config/origins.go), less the default ports, refused apart.
ORIGIN_PATTERN='^[a-z][a-z0-9+.-]*://([a-z0-9_.~-]+|\[[0-9a-f:.]+\])(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?$'

# check_origins refuses, before anything is deployed, an ALLOWED_ORIGINS the functions would refuse
# at start-up.
check_origins() {
  local origins origin
  read -ra origins <<<"$(setting ALLOWED_ORIGINS)"
  for origin in "${origins[@]}"; do
    if [[ ! $origin =~ $ORIGIN_PATTERN || $origin == http://*:80 || $origin == https://*:443 ]]; then
      die "ALLOWED_ORIGINS: \"$origin\" is not an origin: write each as scheme://host[:port] in lower case," \
        "as browsers send it (e.g. https://app.example.com http://localhost:5173): no path or trailing /, no *, no default port"
    fi
  done
}

# configure_fields applies FIELD_SETTINGS: the TTL policies and single-field index settings the
# design relies on (functions.FieldSettings says why).
configure_fields() {
  local fs=(--project="$PROJECT" --database="$DATABASE") row collection field ttl ascending
  for row in "${FIELD_SETTINGS[@]}"; do
    read -r collection field ttl ascending <<<"$row"
    if [[ -v ENV_DEFAULTS[$collection] ]]; then collection=$(setting "$collection"); fi
    if $ttl; then
      run gcloud firestore fields ttls update "$field" --collection-group="$collection" --enable-ttl "${fs[@]}"
    fi
    if $ascending; then
      run gcloud firestore indexes fields update "$field" --collection-group="$collection" \
        --index=order=ascending "${fs[@]}"
    else
      run gcloud firestore indexes fields update "$field" --collection-group="$collection" \
        --disable-indexes "${fs[@]}"
    fi
  done
}

# deploy_function deploys the function of one FUNCTIONS row (see each_function) from this folder.
# Cloud Run wants a whole vCPU for a concurrency above 1, and gcloud wants --memory with --cpu.
# create_indexes creates the COMPOSITE_INDEXES the top lists' queries need; Firestore builds them in
# the background (--async), and the queries fail until they are ready.
create_indexes() {
  local row words collection field configs
  for row in "${COMPOSITE_INDEXES[@]}"; do
    read -r -a words <<<"$row"
    collection=${words[0]}
    if [[ -v ENV_DEFAULTS[$collection] ]]; then collection=$(setting "$collection"); fi
    configs=()
    for field in "${words[@]:1}"; do
      configs+=(--field-config="field-path=${field%:*},order=${field##*:}")
    done
    create_if_absent gcloud firestore indexes composite create --collection-group="$collection" \
      --query-scope=collection "${configs[@]}" --async --project="$PROJECT" --database="$DATABASE"
  done
}

deploy_function() {
  local name=$1 entry_point=$2 event_type=$3 topic=$4 document=$5 retry=$6 memory=$8 cpu=$9
  local concurrency=${10} timeout=${11} max_instances=${12} public_on_request=${13} from_root=${15}
  local limits=(--memory="$memory" --concurrency="$concurrency" --timeout="$timeout" --max-instances="$max_instances")
  [[ $cpu == - ]] || limits+=(--cpu="$cpu")
  local trigger=(--trigger-http --no-allow-unauthenticated)
  if [[ $event_type == - ]]; then
    if $public_on_request && $PUBLIC_INCREMENTS; then trigger=(--trigger-http --allow-unauthenticated); fi
  elif [[ $topic != - ]]; then
    trigger=(--trigger-service-account="${ACCOUNT[trigger]}" --trigger-topic="$topic")
  else
    # The Firestore trigger lives where the database is.
    $from_root || document="$(setting COUNTERS_COLLECTION)/$document"
    trigger=(--trigger-location="$DATABASE_LOCATION" --trigger-service-account="${ACCOUNT[trigger]}"
      --trigger-event-filters=type="$event_type" --trigger-event-filters=database="$DATABASE"
      --trigger-event-filters-path-pattern=document="$document")
  fi
  ! $retry || trigger+=(--retry)
  local labels="counters_version=$VERSION_LABEL"
  [[ -z ${SOURCE_BASE[$name]:-} ]] || labels+=",$SOURCE_LABEL=${SOURCE_BASE[$name]}"
  run gcloud functions deploy "$name" --gen2 --project="$PROJECT" --region="$REGION" \
    --runtime="$RUNTIME" --source=. --entry-point="$entry_point" \
    --build-service-account="projects/$PROJECT/serviceAccounts/${ACCOUNT[build]}" \
    --docker-repository="projects/$PROJECT/locations/$REGION/repositories/$REPOSITORY" \
    --service-account="${ACCOUNT[runtime]}" --set-env-vars="$ENV_VARS" --update-labels="$labels" \
    "${limits[@]}" --quiet "${trigger[@]}"
}

# sync_invokers makes the invokers of a function exactly its invoker column's (manifest.Invoker): an
# account, or the --admin-invoker or --invoker members, plus allUsers for a function that is public
# on request when --allow-unauthenticated-increments is given. It grants the listed members, then
# reads the service's policy and revokes INVOKER_ROLE from every other member.
sync_invokers() {
  local name=$1 public_on_request=${13} invoker=${14} member CURRENT_INVOKERS wanted
  case $invoker in
  account:*) wanted=("serviceAccount:${ACCOUNT[${invoker#account:}]}") ;;
  list:admin) wanted=("${ADMIN_INVOKERS[@]}") ;;
  list:http) wanted=("${INVOKERS[@]}") ;;
  *) die "$name: invoker $invoker: deployment.gen.sh names no account:KEY, list:admin or list:http" ;;
  esac
  if $public_on_request && $PUBLIC_INCREMENTS; then wanted+=(allUsers); fi
  for member in "${wanted[@]}"; do
    run gcloud functions add-invoker-policy-binding "$name" --project="$PROJECT" --region="$REGION" \
      --member="$member"
  done
  lookup CURRENT_INVOKERS gcloud run services get-iam-policy "$name" --project="$PROJECT" --region="$REGION" \
    --flatten='bindings[].members' --filter="bindings.role=$INVOKER_ROLE" --format='value(bindings.members)'
  if $DRY_RUN; then
    note "then, for each member of CURRENT_INVOKERS not granted above:"
    run gcloud functions remove-invoker-policy-binding "$name" --project="$PROJECT" --region="$REGION" \
      --member=CURRENT_INVOKERS_MEMBER
    return
  fi
  for member in $CURRENT_INVOKERS; do
    in_list "$member" "${wanted[@]}" && continue
    run gcloud functions remove-invoker-policy-binding "$name" --project="$PROJECT" --region="$REGION" \
      --member="$member"
  done
}

# is_true succeeds when a boolean setting's value is true as the functions read it (strconv.ParseBool).
is_true() {
  case $1 in 1 | t | T | TRUE | true | True) return 0 ;; esac
  return 1
}

# warn_public_increments says what a public Increment lets callers do that the settings do not
# bound: calls without an account (none required, App Check alone, anonymous sign-in accepted, or
# email sign-up without a verified address),
# counters created by increment under any name, and distinct counters fed members the client makes
# up. terraform/functions.tf's check says the same, in the same words.
warn_public_increments() {
  $PUBLIC_INCREMENTS || return 0
  local id_token=false app_check=false anonymous=true unverified=true creates=false risks=() adds
  is_true "$(setting REQUIRE_ID_TOKEN)" && id_token=true
  is_true "$(setting REQUIRE_APP_CHECK)" && app_check=true
  is_true "$(setting REQUIRE_VERIFIED_EMAIL)" && anonymous=false unverified=false
  is_true "$(setting REFUSE_ANONYMOUS_USERS)" && anonymous=false
  is_true "$(setting CREATE_ON_INCREMENT)" && [[ -z $(setting COUNTER_ID_PATTERN) ]] && creates=true
  adds="may call it and add up to MAX_DELTA=$(setting MAX_DELTA) per request"
  if ! $id_token && ! $app_check; then
    risks+=("Anyone $adds, with no bound per person.")
  elif ! $id_token; then
    risks+=("Anyone with your app $adds, with no bound per person (App Check alone attests the app, not who uses it).")
  elif $anonymous; then
    risks+=("Anyone who signs in anonymously, as often as they like, $adds: each sign-in is a new user to PER_CALLER_LIMIT and to distinct counters (REFUSE_ANONYMOUS_USERS=true refuses them).")
  elif $unverified; then
    risks+=("Anyone who signs up with an email address, as often as they like (email sign-up makes accounts at will), $adds: each account is a new user to PER_CALLER_LIMIT and to distinct counters (REQUIRE_VERIFIED_EMAIL=true refuses accounts without a verified address).")
  fi
  if $creates; then
    risks+=("Callers may create any number of counters with any name (CREATE_ON_INCREMENT without COUNTER_ID_PATTERN): each stays, costs writes and shows in roll-up lists.")
  fi
  if ! $id_token; then
    risks+=("A distinct counter, if you configure one, counts whatever member a caller sends: its count can be inflated at will, each made-up member costs documents, and counted:false tells anyone whether a given member (say an email address) was counted (REQUIRE_ID_TOKEN=true makes the member the signed-in user).")
  fi
  ((${#risks[@]})) || return 0
  warn "Increment is public. ${risks[*]} See docs/operations.md, \"Public increments\"."
}

# ensure_scheduler_jobs makes each job of SCHEDULES publish its message to its topic on its schedule
# (at least once).
ensure_scheduler_jobs() {
  local row topic time_zone message schedule verb
  for row in "${SCHEDULES[@]}"; do
    read -r topic time_zone message schedule <<<"$row"
    verb=update
    missing gcloud scheduler jobs describe "$topic" --project="$PROJECT" --location="$REGION" && verb=create
    run gcloud scheduler jobs "$verb" pubsub "$topic" --project="$PROJECT" --location="$REGION" \
      --schedule="$schedule" --time-zone="$time_zone" --topic="$topic" --message-body="$message"
  done
}

# json_string prints its argument as a JSON string.
json_string() {
  local s=$1
  s=${s//\\/\\\\} s=${s//\"/\\\"} s=${s//$'\t'/\\t} s=${s//$'\r'/\\r} s=${s//$'\n'/\\n}
  printf '"%s"' "$s"
}

# rules_api METHOD PATH [BODY_FILE] calls the Firebase Rules API (v1/PATH), as google_api does.
rules_api() {
  google_api "https://firebaserules.googleapis.com/v1" "$@"
}

# google_api BASE METHOD PATH [BODY_FILE] calls the Google API at BASE/PATH with curl as gcloud's
# account, prints the answer, and fails with it on an HTTP error. The access token goes to curl on
# its standard input, never on a command line or in the output. A dry run prints the call, with
# ACCESS_TOKEN standing for the token, and answers nothing.
google_api() {
  local method=$2 url="$1/$3" body=${4:-}
  local args=(-sS --fail-with-body -X "$method" -H "x-goog-user-project: $PROJECT" -H "Content-Type: application/json")
  [[ -z $body ]] || args+=(--data-binary "@$body")
  if $DRY_RUN; then
    quote curl -H "Authorization: Bearer ACCESS_TOKEN" "${args[@]}" "$url"
    return
  fi
  quote curl -H "Authorization: Bearer ACCESS_TOKEN" "${args[@]}" "$url" | sed 's/^/+ /' >&2
  local token
  token=$(gcloud auth print-access-token --project="$PROJECT") || die "gcloud auth print-access-token failed"
  printf 'header = "Authorization: Bearer %s"\n' "$token" | curl -K - "${args[@]}" "$url"
}

# replace_rules makes the ruleset in REPLACE_RULES the database's whole ruleset, as firebase deploy
# does: it creates a ruleset from the file, then points the database's release at it, creating the
# release if the database has none.
replace_rules() {
  local release=cloud.firestore content stripped answer RULESET
  [[ $DATABASE == "(default)" ]] || release="cloud.firestore/$DATABASE"
  content=$(<"$REPLACE_RULES")
  stripped=${content//[$'\t\r\n']/}
  [[ $stripped != *[[:cntrl:]]* ]] || die "--replace-rules $REPLACE_RULES: it holds control characters"
  note "security rules: replacing the whole ruleset of database $DATABASE with $REPLACE_RULES (--replace-rules)"
  local name="projects/$PROJECT/releases/$release"
  if $DRY_RUN; then
    note "ruleset.json: {\"source\":{\"files\":[{\"name\":\"firestore.rules\",\"content\": the text of $REPLACE_RULES}]}}"
    note "RULESET is the \"name\" of the next command's answer"
    rules_api POST "projects/$PROJECT/rulesets" ruleset.json
    note "update.json: {\"release\":{\"name\":\"$name\",\"rulesetName\":RULESET}}"
    rules_api PATCH "$name" update.json
    note "if the database has no release yet (NOT_FOUND), create.json: {\"name\":\"$name\",\"rulesetName\":RULESET}"
    rules_api POST "projects/$PROJECT/releases" create.json
    return
  fi
  RULES_TMP=$(mktemp -d)
  trap 'rm -rf "$RULES_TMP"' EXIT
  printf '{"source":{"files":[{"name":"firestore.rules","content":%s}]}}' "$(json_string "$content")" >"$RULES_TMP/ruleset.json"
  answer=$(rules_api POST "projects/$PROJECT/rulesets" "$RULES_TMP/ruleset.json") || die "creating the ruleset failed: $answer"
  [[ $answer =~ \"name\":\ *\"(projects/[^\"]+/rulesets/[^\"]+)\" ]] || die "creating the ruleset: no name in the answer: $answer"
  RULESET=${BASH_REMATCH[1]}
  printf '{"release":{"name":"%s","rulesetName":"%s"}}' "$name" "$RULESET" >"$RULES_TMP/update.json"
  printf '{"name":"%s","rulesetName":"%s"}' "$name" "$RULESET" >"$RULES_TMP/create.json"
  if ! answer=$(rules_api PATCH "$name" "$RULES_TMP/update.json"); then
    [[ $answer == *NOT_FOUND* ]] || die "releasing the ruleset failed: $answer"
    answer=$(rules_api POST "projects/$PROJECT/releases" "$RULES_TMP/create.json") || die "releasing the ruleset failed: $answer"
  fi
}

# present succeeds when the resource the describe command names exists, as missing's opposite. A dry
# run assumes it does, so that it prints every command that deletes something.
present() {
  $DRY_RUN && return 0
  ! missing "$@"
}

# delete_if_present runs a command that deletes something, as run does; an answer that it is already
# gone is success, and any other failure stops the removal with its message.
delete_if_present() {
  if $DRY_RUN; then
    quote "$@"
    return
  fi
  quote "$@" | sed 's/^/+ /' >&2
  local err
  if err=$("$@" 2>&1 >/dev/null); then return 0; fi
  if [[ $err == *NOT_FOUND* || $err == *"not found"* || $err == *"does not exist"* ]]; then return 0; fi
  die "$(quote "$@") failed: $err"
}

# revoke_project_role ACCOUNT ROLE [CONDITION] undoes grant_project_role.
revoke_project_role() {
  delete_if_present gcloud projects remove-iam-policy-binding "$PROJECT" --member="serviceAccount:$1" --role="$2" \
    --condition="${3:-None}" --quiet
}

# index_signature COLLECTION FIELD:ORDER... prints a composite index as one comparable line.
index_signature() {
  local IFS=' '
  printf '%s\n' "${*,,}"
}

# remove_indexes deletes the COMPOSITE_INDEXES: it lists the database's composite indexes and deletes
# each one that is one of them (its collection group, collection scope, the same fields in the same
# order and directions; Firestore's trailing __name__ field aside), and no other.
remove_indexes() {
  local fs=(--project="$PROJECT" --database="$DATABASE") INDEXES row words collection ours=() id
  for row in "${COMPOSITE_INDEXES[@]}"; do
    read -r -a words <<<"$row"
    collection=${words[0]}
    if [[ -v ENV_DEFAULTS[$collection] ]]; then collection=$(setting "$collection"); fi
    ours+=("$(index_signature "$collection" "${words[@]:1}")")
  done
  lookup INDEXES gcloud firestore indexes composite list "${fs[@]}" \
    --format='value(name,queryScope,fields[].fieldPath,fields[].order)'
  if $DRY_RUN; then
    note "then, for each index of INDEXES that is one of these: ${ours[*]}"
    run gcloud firestore indexes composite delete INDEXES_ID "${fs[@]}" --quiet
    return
  fi
  local name scope paths orders fields
  while IFS=$'\t' read -r name scope paths orders; do
    [[ $name =~ /collectionGroups/([^/]+)/indexes/([^/]+)$ && $scope == COLLECTION ]] || continue
    collection=${BASH_REMATCH[1]} id=${BASH_REMATCH[2]}
    local -a path_list order_list
    IFS=';' read -r -a path_list <<<"$paths"
    IFS=';' read -r -a order_list <<<"$orders"
    fields=()
    local i
    for i in "${!path_list[@]}"; do
      [[ ${path_list[i]} == __name__ && $i -eq $((${#path_list[@]} - 1)) ]] || fields+=("${path_list[i]}:${order_list[i]:-}")
    done
    in_list "$(index_signature "$collection" "${fields[@]}")" "${ours[@]}" || continue
    delete_if_present gcloud firestore indexes composite delete "$id" "${fs[@]}" --quiet
  done <<<"$INDEXES"
}

# remove_fields undoes configure_fields: the TTL policies are disabled and the index settings go back
# to the database's defaults.
remove_fields() {
  local fs=(--project="$PROJECT" --database="$DATABASE") row collection field ttl
  for row in "${FIELD_SETTINGS[@]}"; do
    read -r collection field ttl _ <<<"$row"
    if [[ -v ENV_DEFAULTS[$collection] ]]; then collection=$(setting "$collection"); fi
    if $ttl; then
      run gcloud firestore fields ttls update "$field" --collection-group="$collection" --disable-ttl "${fs[@]}"
    fi
    run gcloud firestore indexes fields update "$field" --collection-group="$collection" --clear-exemption "${fs[@]}"
  done
}

# remove_deployment deletes what a deploy with the same options created (--remove). The functions go
# first, so that nothing writes or publishes while the rest goes; deleting a function deletes its
# Eventarc trigger and the trigger's push subscription.
remove_deployment() {
  local row topic columns name dead_letter
  for row in "${SCHEDULES[@]}"; do
    read -r topic _ <<<"$row"
    if present gcloud scheduler jobs describe "$topic" --project="$PROJECT" --location="$REGION"; then
      delete_if_present gcloud scheduler jobs delete "$topic" --project="$PROJECT" --location="$REGION" --quiet
    fi
  done
  remove_undeclared_sources
  for row in "${FUNCTIONS[@]}"; do
    read -r -a columns <<<"$row"
    name=${columns[0]} dead_letter=${columns[6]}
    if present gcloud functions describe "$name" --project="$PROJECT" --region="$REGION"; then
      delete_if_present gcloud functions delete "$name" --gen2 --project="$PROJECT" --region="$REGION" --quiet
    fi
    if [[ $dead_letter != - ]] && present gcloud pubsub subscriptions describe "$dead_letter" --project="$PROJECT"; then
      delete_if_present gcloud pubsub subscriptions delete "$dead_letter" --project="$PROJECT" --quiet
    fi
  done
  for topic in "${TOPICS[@]}"; do
    if present gcloud pubsub topics describe "$topic" --project="$PROJECT"; then
      delete_if_present gcloud pubsub topics delete "$topic" --project="$PROJECT" --quiet
    fi
  done
  if present gcloud artifacts repositories describe "$REPOSITORY" --project="$PROJECT" --location="$REGION"; then
    delete_if_present gcloud artifacts repositories delete "$REPOSITORY" --project="$PROJECT" --location="$REGION" --quiet
  fi
  remove_indexes
  remove_fields
  remove_monitoring
  each_role project revoke_project_role
  for row in "${SERVICE_ACCOUNTS[@]}"; do
    name=${ACCOUNT[${row%% *}]}
    if present gcloud iam service-accounts describe "$name" --project="$PROJECT"; then
      delete_if_present gcloud iam service-accounts delete "$name" --project="$PROJECT" --quiet
    fi
  done
  if [[ -n $REPLACE_RULES ]]; then
    replace_rules
  else
    note "Firestore security rules: left as they are; if they hold the counters' block, deploy your app's own rules" \
      "again (make rules APP_RULES=<file> REMOVE=1 OUT=<file> takes the block out), or run again with --replace-rules <that file>."
  fi
  note "Left as they were: the database and its documents (the counters' collections are deleted as" \
    "docs/existing-app.md says), the enabled APIs, the uploaded sources Cloud Functions keeps," \
    "and the logs."
}

# The monitoring (docs/operations.md, "Monitoring"): the log-based metrics, SLO service and SLOs,
# alert policies and dashboard of scripts/monitoring/, which `go generate ./...` writes from
# internal/manifest/monitoring.go. The alert policies and the dashboard have names the API chooses:
# they are found by the policies' user label counters_alert and by the dashboard's title. The
# files name the project PROJECT_ID (manifest.ProjectPlaceholder).
readonly ALERT_LABEL=counters_alert
readonly NOTIFY_LABEL=counters_notify
readonly SLO_SERVICE=counters
readonly MONITORING_API=https://monitoring.googleapis.com/v3
readonly DASHBOARD_TITLE='Distributed counters'

# alert_keys prints the keys of the alert policies.
alert_keys() {
  local file keys=()
  for file in scripts/monitoring/policies/*.json; do keys+=("$(basename "$file" .json)"); done
  printf '%s\n' "${keys[*]}"
}

# absence_policy FILE says whether the alert policy of FILE has a metric-absence condition, whose
# threshold is its duration in minutes.
absence_policy() {
  [[ $(<"$1") == *'"conditionAbsent":'* ]]
}

# ensure_monitoring creates or updates every log-based metric, the SLOs, every alert policy and the
# dashboard.
ensure_monitoring() {
  local dir=$PWD/scripts/monitoring file name verb
  for file in "$dir"/metrics/*.json; do
    name=$(basename "$file" .json)
    verb=update
    missing gcloud logging metrics describe "$name" --project="$PROJECT" && verb=create
    run gcloud logging metrics "$verb" "$name" --project="$PROJECT" --config-from-file="$file"
  done
  ensure_api_resource "projects/$PROJECT/services" "$SLO_SERVICE" serviceId "$dir/service.json"
  for file in "$dir"/slos/*.json; do
    ensure_api_resource "projects/$PROJECT/services/$SLO_SERVICE/serviceLevelObjectives" "$(basename "$file" .json)" \
      serviceLevelObjectiveId "$file"
  done
  for file in "$dir"/policies/*.json; do ensure_alert_policy "$file"; done
  ensure_dashboard "$dir/dashboard.json"
}

# ensure_api_resource PARENT ID ID_PARAMETER FILE replaces the Monitoring API resource PARENT/ID
# with FILE's body (PATCH), or creates it when there is none (POST PARENT?ID_PARAMETER=ID).
ensure_api_resource() {
  local answer
  if $DRY_RUN; then
    google_api "$MONITORING_API" PATCH "$1/$2" "$4"
    note "if that answers NOT_FOUND:"
    google_api "$MONITORING_API" POST "$1?$3=$2" "$4"
    return
  fi
  if ! answer=$(google_api "$MONITORING_API" PATCH "$1/$2" "$4"); then
    [[ $answer == *NOT_FOUND* ]] || die "updating $1/$2 failed: $answer"
    answer=$(google_api "$MONITORING_API" POST "$1?$3=$2" "$4") || die "creating $1/$2 failed: $answer"
  fi
}

# ensure_alert_policy FILE creates the alert policy of FILE, or replaces the one with its key, with
# the threshold of --alert-threshold if given, the project for PROJECT_ID, and the channels of its
# class (--page-channel or --ticket-channel, by its label counters_notify).
ensure_alert_policy() {
  local key policy POLICY channels
  key=$(basename "$1" .json)
  policy=$(<"$1") # one line
  policy=${policy//projects\/PROJECT_ID\//projects\/$PROJECT\/}
  if [[ -n ${ALERT_THRESHOLDS[$key]:-} ]] && absence_policy "$1"; then
    [[ $policy =~ \"duration\":\ *\"[0-9]+s\" ]] || die "$1: no duration"
    policy=${policy/"${BASH_REMATCH[0]}"/\"duration\": \"$((10#${ALERT_THRESHOLDS[$key]} * 60))s\"}
  elif [[ -n ${ALERT_THRESHOLDS[$key]:-} ]]; then
    # The first thresholdValue is the policy's; a minimum request count (last, another value) stays.
    [[ $policy =~ \"thresholdValue\":\ *[0-9.eE+-]+, ]] || die "$1: no thresholdValue"
    policy=${policy//"${BASH_REMATCH[0]}"/\"thresholdValue\": ${ALERT_THRESHOLDS[$key]},}
  fi
  [[ $policy =~ \"$NOTIFY_LABEL\":\ *\"(page|ticket)\" ]] || die "$1: no $NOTIFY_LABEL label"
  channels=${CHANNELS[${BASH_REMATCH[1]}]}
  lookup POLICY gcloud alpha monitoring policies list --project="$PROJECT" \
    --filter="userLabels.$ALERT_LABEL=$key" --format='value(name)'
  if $DRY_RUN || [[ -z $POLICY ]]; then
    $DRY_RUN && note "when POLICY is empty:"
    run gcloud alpha monitoring policies create --project="$PROJECT" --policy="$policy" \
      ${channels:+--notification-channels="$channels"}
  fi
  if $DRY_RUN || [[ -n $POLICY ]]; then
    $DRY_RUN && note "else:"
    run gcloud alpha monitoring policies update "$POLICY" --project="$PROJECT" --policy="$policy" \
      ${channels:+--set-notification-channels="$channels"}
  fi
}

# ensure_dashboard FILE creates the dashboard of FILE, or replaces the one with its title.
ensure_dashboard() {
  local config DASHBOARD name etag
  config=$(<"$1") # one line
  lookup DASHBOARD gcloud monitoring dashboards list --project="$PROJECT" \
    --filter="displayName='$DASHBOARD_TITLE'" --format='value(name,etag)'
  if $DRY_RUN || [[ -z $DASHBOARD ]]; then
    $DRY_RUN && note "when DASHBOARD is empty:"
    run gcloud monitoring dashboards create --project="$PROJECT" --config="$config"
  fi
  if $DRY_RUN || [[ -n $DASHBOARD ]]; then
    $DRY_RUN && note "else, with its name and etag (the update must carry the etag it replaces):"
    read -r name etag <<<"$DASHBOARD"
    run gcloud monitoring dashboards update "$name" --project="$PROJECT" \
      --config="{\"etag\": \"${etag:-ETAG}\",${config#\{}"
  fi
}

# remove_monitoring deletes what ensure_monitoring created: of the policies labelled counters_alert,
# those whose label is a key of ours (a prefixed Terraform deployment's say PREFIXKEY).
remove_monitoring() {
  local file name key keys POLICIES DASHBOARDS answer
  for file in "$PWD"/scripts/monitoring/metrics/*.json; do
    name=$(basename "$file" .json)
    if present gcloud logging metrics describe "$name" --project="$PROJECT"; then
      delete_if_present gcloud logging metrics delete "$name" --project="$PROJECT" --quiet
    fi
  done
  lookup POLICIES gcloud alpha monitoring policies list --project="$PROJECT" \
    --filter="userLabels.$ALERT_LABEL:*" --format="value(name,userLabels.$ALERT_LABEL)"
  lookup DASHBOARDS gcloud monitoring dashboards list --project="$PROJECT" \
    --filter="displayName='$DASHBOARD_TITLE'" --format='value(name)'
  if $DRY_RUN; then
    note "then, for each policy of POLICIES whose label is one of ours ($(alert_keys)), and each dashboard of DASHBOARDS:"
    run gcloud alpha monitoring policies delete POLICIES_NAME --project="$PROJECT" --quiet
    run gcloud monitoring dashboards delete DASHBOARDS_NAME --project="$PROJECT" --quiet
    note "then the SLO service, with its SLOs:"
    google_api "$MONITORING_API" DELETE "projects/$PROJECT/services/$SLO_SERVICE"
    return
  fi
  keys=" $(alert_keys) "
  while read -r name key; do
    [[ -n $name && $keys == *" $key "* ]] || continue
    delete_if_present gcloud alpha monitoring policies delete "$name" --project="$PROJECT" --quiet
  done <<<"$POLICIES"
  for name in $DASHBOARDS; do
    delete_if_present gcloud monitoring dashboards delete "$name" --project="$PROJECT" --quiet
  done
  # Once no policy refers to its SLOs: deleting the service deletes them.
  if ! answer=$(google_api "$MONITORING_API" DELETE "projects/$PROJECT/services/$SLO_SERVICE") && [[ $answer != *NOT_FOUND* ]]; then
    die "deleting the SLO service failed: $answer"
  fi
}

# load_sources checks the counter sources declaration file as the functions will read it, with
# cmd/sources (sources.Load, the functions' own check), and sets SOURCES_PATH and SOURCE_ROWS: one
# SOURCE_FUNCTIONS row per declared document pattern, named and patterned as cmd/sources says. A
# file that cannot work stops the deploy here, before anything is deployed, with the check's message.
load_sources() {
  local out name entry_point pattern row columns
  out=$(COUNTER_SOURCES=$(setting COUNTER_SOURCES) COUNTERS_COLLECTION=$(setting COUNTERS_COLLECTION) \
    ROLLUPS_COLLECTION=$(setting ROLLUPS_COLLECTION) TOPS_COLLECTION=$(setting TOPS_COLLECTION) \
    DEDUPE_COLLECTION=$(setting DEDUPE_COLLECTION) go run ./cmd/sources deploy) ||
    die "counter sources: $(setting COUNTER_SOURCES) cannot be deployed (above); nothing was deployed"
  {
    IFS= read -r SOURCES_PATH
    while IFS=$'\t' read -r name entry_point pattern; do
      for row in "${SOURCE_FUNCTIONS[@]}"; do
        read -r -a columns <<<"$row"
        [[ ${columns[1]} == "$entry_point" ]] || continue
        SOURCE_BASE[$name]=${columns[0]}
        SOURCE_NAMES+=("$name")
        columns[0]=$name columns[4]=$pattern
        SOURCE_ROWS+=("${columns[*]}")
      done
    done
  } <<<"$out"
  for name in "${SOURCE_NAMES[@]}"; do note "counter source function $name: ${SOURCE_BASE[$name]}"; done
}

# remove_undeclared_sources deletes every function of a counter source (labelled SOURCE_LABEL)
# whose name is not one of SOURCE_ROWS' (a pattern no longer declared; with --remove, all of them).
remove_undeclared_sources() {
  local DEPLOYED_SOURCES name declared=("${SOURCE_NAMES[@]}")
  lookup DEPLOYED_SOURCES gcloud functions list --project="$PROJECT" --regions="$REGION" \
    --filter="labels.$SOURCE_LABEL:*" --format='value(name.basename())'
  if $DRY_RUN; then
    note "then, for each function of DEPLOYED_SOURCES that is not one of these: ${declared[*]:-(none declared)}"
    delete_if_present gcloud functions delete DEPLOYED_SOURCES_NAME --gen2 --project="$PROJECT" --region="$REGION" --quiet
    return
  fi
  for name in $DEPLOYED_SOURCES; do
    name=${name##*/}
    in_list "$name" "${declared[@]}" && continue
    note "counter source function $name: its pattern is no longer declared"
    delete_if_present gcloud functions delete "$name" --gen2 --project="$PROJECT" --region="$REGION" --quiet
  done
}

# print_url prints the URL of an HTTP function.
print_url() {
  [[ $3 == - ]] || return 0
  run gcloud functions describe "$1" --project="$PROJECT" --region="$REGION" --format='value(url)'
}

# env_vars sets ENV_VARS, the functions' --set-env-vars: the project, the database and every --env
# setting. A value may hold commas (COUNTER_ID_PATTERN=post-[0-9]{1,12}), so the pairs are separated
# by a character no value holds, announced as ^DELIM^ (`gcloud topic escaping`).
env_vars() {
  local pairs=("${ENV_OF_OPTION[project]}=$PROJECT" "${ENV_OF_OPTION[database]}=$DATABASE") name delim
  for name in "${ENV_NAMES[@]}"; do
    [[ $name != COUNTER_SOURCES ]] || continue
    if [[ -n ${ENV_VALUES[$name]:-} ]]; then pairs+=("$name=${ENV_VALUES[$name]}"); fi
  done
  [[ -z $SOURCES_PATH ]] || pairs+=("COUNTER_SOURCES=$SOURCES_PATH")
  for delim in @ '|' '~' ';' '#' % ! + '*' -; do
    [[ ${pairs[*]} == *"$delim"* ]] && continue
    local IFS=$delim
    ENV_VARS="^$delim^${pairs[*]}"
    return
  done
  die "--env: the values hold every delimiter gcloud could separate them with (@|~;#%!+*-)"
}

main() {
  cd "$(dirname "$0")/.."
  parse_flags "$@"
  check_ttl_collections
  check_origins
  RUNTIME=$(go_runtime)
  local row key id
  for row in "${SERVICE_ACCOUNTS[@]}"; do
    read -r key id _ <<<"$row"
    ACCOUNT[$key]="$id@$PROJECT.iam.gserviceaccount.com"
  done
  $REMOVE || $DEAD_LETTER_ONLY || load_sources
  env_vars

  if $REMOVE; then
    remove_deployment
    return
  fi
  warn_public_increments
  if $DEAD_LETTER_ONLY; then
    each_function attach_dead_letter
    return
  fi
  enable_apis
  ensure_database
  ensure_identities
  ensure_repository
  ensure_topics
  configure_fields
  create_indexes
  [[ -z $REPLACE_RULES ]] || replace_rules
  each_function deploy_function
  remove_undeclared_sources
  each_function attach_dead_letter
  each_function sync_invokers
  ensure_scheduler_jobs
  ensure_monitoring
  each_function print_url
  if [[ -z $REPLACE_RULES ]]; then
    note "Firestore security rules: left as they are (a database has one ruleset, your app's too)." \
      "Clients cannot read the roll-ups until it holds the counters' block: add it to your app's rules with" \
      "make rules APP_RULES=<your rules file> OUT=<combined file>, then deploy that file as you deploy your rules," \
      "or run again with --replace-rules <combined file> (a database of its own: --replace-rules firestore.rules)." \
      "docs/operations.md, \"Security rules\"."
  fi
}

main "$@"
