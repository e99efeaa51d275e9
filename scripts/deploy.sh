#!/usr/bin/env bash
# Deploys the distributed counters into one Google Cloud project with gcloud: the Firestore database
# settings (TTL, single-field indexes), the Pub/Sub topics, the Cloud Scheduler job, the service
# accounts and their roles, and every function (2nd gen, one `gcloud functions deploy` per entry
# point). Every step is idempotent: run it again to update. See README.md, "Deploy".
#
# The consistency test (internal/deploycheck) runs `--dry-run` and compares the commands with the
# code's trigger table (functions.Triggers), go.mod and the environment variables shared/ reads.
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
  --env NAME=VALUE          set one of the functions' optional variables (repeatable); see --list-env
  --invoker MEMBER          grant MEMBER (e.g. serviceAccount:backend@p.iam.gserviceaccount.com)
                            roles/run.invoker on the HTTP functions (repeatable)
  --allow-unauthenticated-increments
                            make Increment public (allUsers may invoke it). Off by default: read
                            README.md, "Public increments", first
  --max-delivery-attempts N deliveries of an increment message before it is parked in the
                            dead-letter topic (5..100, default 10)
  --dead-letter-only        only park the increments that keep failing: attach the dead-letter topic
                            to the subscription Eventarc made for increment-from-pubsub (what
                            Terraform runs after it deploys the function)
  --dry-run                 print every command, one per line, and run nothing
  --list-env                print the names of the environment variables the functions can be given
  -h, --help                this help
EOF
}

# Optional configuration of the functions: the names shared/config.go reads (checked by the
# consistency test). GOOGLE_CLOUD_PROJECT and FIRESTORE_DATABASE come from --project and --database.
readonly OPTIONAL_ENV=(
  COUNTERS_COLLECTION ROLLUPS_COLLECTION DEDUPE_COLLECTION
  DEFAULT_NUM_SHARDS MAX_DELTA SHARD_COUNT_CACHE_TTL REQUEST_TIMEOUT LOG_LEVEL
  ROLLUP_INTERVAL ROLLUP_SWEEP_LOOKBACK GROUP_COMMIT_INTERVAL DEDUPE_TTL
  REQUIRE_ID_TOKEN REQUIRE_APP_CHECK PER_CALLER_LIMIT
)

# Names fixed by the code (shared/schema.go): topics, fields and the shards subcollection.
readonly TOPIC_INCREMENTS=counter-increments
readonly TOPIC_ROLLUP_TICK=counter-rollup-tick
# Increments that failed --max-delivery-attempts times are parked here (with a pull subscription of
# the same name that keeps them 7 days) instead of being retried until Pub/Sub drops them.
readonly TOPIC_DEAD_LETTER=counter-increments-dead-letter
readonly SHARDS_COLLECTION=shards
readonly FIELD_COUNT=count
readonly FIELD_WRITES=writes
readonly FIELD_UPDATED_AT=updated_at
readonly FIELD_EXPIRES_AT=expires_at

# Per-function deploy settings, one row per function: name, entry point, memory, vCPU ("-": the
# platform's default for the memory, 0.167 at 256Mi), concurrent requests per instance, timeout, most
# instances. Cloud Run wants a whole vCPU for a concurrency above 1, and gcloud wants --memory with
# --cpu. terraform/variables.tf, variable "function_settings", holds the same table: the consistency
# test (internal/deploycheck) fails when they differ. README.md, "Production limits", says why.
readonly FUNCTION_SETTINGS='
increment              Increment            256Mi  1  80    60s   100
count                  Count                256Mi  -  1     60s   10
configure-counter      ConfigureCounter     256Mi  -  1     60s   5
increment-from-pubsub  IncrementFromPubSub  256Mi  1  1000  60s   100
rollup-on-shard-write  RollupOnShardWrite   512Mi  1  80    60s   20
rollup-scheduled       RollupScheduled      256Mi  -  1     300s  1
'

readonly RUNTIME_SA_NAME=counters-runtime
readonly TRIGGER_SA_NAME=counters-trigger
readonly SCHEDULER_JOB=counter-rollup-tick

PROJECT=${GOOGLE_CLOUD_PROJECT:-}
REGION=${GOOGLE_CLOUD_REGION:-}
DATABASE=${FIRESTORE_DATABASE:-(default)}
DATABASE_LOCATION=${FIRESTORE_LOCATION:-}
DRY_RUN=false
DEAD_LETTER_ONLY=false
MAX_DELIVERY_ATTEMPTS=10
PUBLIC_INCREMENTS=false
INVOKERS=()
declare -A ENV_VALUES=()

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

# missing succeeds when the resource the describe command names does not exist. A dry run assumes a
# fresh project, so that it prints every command that creates something.
missing() {
  $DRY_RUN && return 0
  ! "$@" >/dev/null 2>&1
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
      in_list "$name" "${OPTIONAL_ENV[@]}" || die "--env $name: unknown; known: ${OPTIONAL_ENV[*]}"
      [[ $value != *,* ]] || die "--env $name: a value may not contain a comma"
      ENV_VALUES[$name]=$value
      shift
      ;;
    --invoker) INVOKERS+=("${2:?--invoker needs a member}") && shift ;;
    --allow-unauthenticated-increments) PUBLIC_INCREMENTS=true ;;
    --dead-letter-only) DEAD_LETTER_ONLY=true ;;
    --max-delivery-attempts) MAX_DELIVERY_ATTEMPTS=${2:?--max-delivery-attempts needs a number} && shift ;;
    --dry-run) DRY_RUN=true ;;
    --list-env)
      printf '%s\n' GOOGLE_CLOUD_PROJECT FIRESTORE_DATABASE "${OPTIONAL_ENV[@]}"
      exit 0
      ;;
    -h | --help) usage && exit 0 ;;
    *) usage >&2 && die "unknown argument: $1" ;;
    esac
    shift
  done
  [[ -n $PROJECT ]] || die "no project: pass --project or set GOOGLE_CLOUD_PROJECT"
  [[ -n $REGION ]] || die "no region: pass --region or set GOOGLE_CLOUD_REGION"
}

# env_or_default prints the value given with --env NAME=..., or the default.
env_or_default() {
  printf '%s\n' "${ENV_VALUES[$1]:-$2}"
}

# go_runtime prints the Cloud Functions runtime matching go.mod's go line: "go 1.26.0" is go126.
go_runtime() {
  local version
  version=$(awk '$1 == "go" { print $2; exit }' go.mod)
  [[ $version =~ ^1\.([0-9]+) ]] || die "go.mod: cannot read the go line (got '$version')"
  printf 'go1%s\n' "${BASH_REMATCH[1]}"
}

enable_apis() {
  run gcloud services enable --project="$PROJECT" \
    cloudfunctions.googleapis.com run.googleapis.com cloudbuild.googleapis.com \
    artifactregistry.googleapis.com eventarc.googleapis.com pubsub.googleapis.com \
    cloudscheduler.googleapis.com firestore.googleapis.com logging.googleapis.com iam.googleapis.com
}

ensure_database() {
  if [[ -z $DATABASE_LOCATION ]] && ! $DRY_RUN; then
    DATABASE_LOCATION=$(gcloud firestore databases describe --project="$PROJECT" --database="$DATABASE" \
      --format='value(locationId)' 2>/dev/null || true)
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

# ensure_service_account NAME DESCRIPTION creates the account unless it exists.
ensure_service_account() {
  local email="$1@$PROJECT.iam.gserviceaccount.com"
  if missing gcloud iam service-accounts describe "$email" --project="$PROJECT"; then
    run gcloud iam service-accounts create "$1" --project="$PROJECT" --display-name="$2"
  fi
}

grant_project_role() {
  run gcloud projects add-iam-policy-binding "$PROJECT" --member="serviceAccount:$1" --role="$2" \
    --condition=None --quiet
}

ensure_identities() {
  ensure_service_account "$RUNTIME_SA_NAME" "Distributed counters: functions at runtime"
  ensure_service_account "$TRIGGER_SA_NAME" "Distributed counters: Eventarc and Pub/Sub push deliveries"
  # The functions read and write Firestore, nothing else.
  grant_project_role "$RUNTIME_SA" roles/datastore.user
  # Eventarc delivers Firestore events as this account; roles/run.invoker is granted per function below.
  grant_project_role "$TRIGGER_SA" roles/eventarc.eventReceiver
}

ensure_topics() {
  local topic
  for topic in "$TOPIC_INCREMENTS" "$TOPIC_ROLLUP_TICK" "$TOPIC_DEAD_LETTER"; do
    if missing gcloud pubsub topics describe "$topic" --project="$PROJECT"; then
      run gcloud pubsub topics create "$topic" --project="$PROJECT"
    fi
  done
  # A topic keeps nothing by itself: this subscription holds the parked increments for inspection.
  if missing gcloud pubsub subscriptions describe "$TOPIC_DEAD_LETTER" --project="$PROJECT"; then
    run gcloud pubsub subscriptions create "$TOPIC_DEAD_LETTER" --project="$PROJECT" \
      --topic="$TOPIC_DEAD_LETTER" --message-retention-duration=7d --expiration-period=never
  fi
}

# attach_dead_letter makes Pub/Sub park an increment message after MAX_DELIVERY_ATTEMPTS failed
# deliveries. Eventarc made the push subscription of increment-from-pubsub's trigger, so the policy
# goes on that subscription, and Pub/Sub's service agent needs to read it and publish to the topic.
attach_dead_letter() {
  local TRIGGER SUBSCRIPTION PROJECT_NUMBER agent
  lookup TRIGGER gcloud functions describe increment-from-pubsub --project="$PROJECT" --region="$REGION" \
    --format='value(eventTrigger.trigger)'
  lookup SUBSCRIPTION gcloud eventarc triggers describe "$TRIGGER" --project="$PROJECT" --location="$REGION" \
    --format='value(transport.pubsub.subscription)'
  lookup PROJECT_NUMBER gcloud projects describe "$PROJECT" --format='value(projectNumber)'
  agent="serviceAccount:service-$PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com"
  run gcloud pubsub topics add-iam-policy-binding "$TOPIC_DEAD_LETTER" --project="$PROJECT" \
    --member="$agent" --role=roles/pubsub.publisher
  run gcloud pubsub subscriptions add-iam-policy-binding "$SUBSCRIPTION" --project="$PROJECT" \
    --member="$agent" --role=roles/pubsub.subscriber
  run gcloud pubsub subscriptions update "$SUBSCRIPTION" --project="$PROJECT" \
    --dead-letter-topic="projects/$PROJECT/topics/$TOPIC_DEAD_LETTER" --max-delivery-attempts="$MAX_DELIVERY_ATTEMPTS"
}

# configure_fields sets the TTL policy and the single-field index settings the design relies on.
configure_fields() {
  local fs=(--project="$PROJECT" --database="$DATABASE")
  # Dedupe records expire: Firestore's TTL policy deletes each one after its expires_at.
  run gcloud firestore fields ttls update "$FIELD_EXPIRES_AT" --collection-group="$DEDUPE_COLLECTION" \
    --enable-ttl "${fs[@]}"
  # expires_at is now + DEDUPE_TTL for every keyed increment, and rollups' updated_at is a timestamp
  # written up to once a second per counter: indexed, both make a hot, ever-increasing index range.
  # Nothing queries them (TTL needs no index; apps read roll-ups by ID).
  run gcloud firestore indexes fields update "$FIELD_EXPIRES_AT" --collection-group="$DEDUPE_COLLECTION" \
    --disable-indexes "${fs[@]}"
  run gcloud firestore indexes fields update "$FIELD_UPDATED_AT" --collection-group="$ROLLUPS_COLLECTION" \
    --disable-indexes "${fs[@]}"
  # Every increment writes a shard's count. The sum aggregation scans the ascending index of count in
  # the counter's shards collection, so keep that one and drop descending and array-contains.
  run gcloud firestore indexes fields update "$FIELD_COUNT" --collection-group="$SHARDS_COLLECTION" \
    --index=order=ascending "${fs[@]}"
  # Every shard write also adds 1 to writes, which the roll-up sums (in the same aggregation as count)
  # to measure the counter's write rate: the same single ascending index.
  run gcloud firestore indexes fields update "$FIELD_WRITES" --collection-group="$SHARDS_COLLECTION" \
    --index=order=ascending "${fs[@]}"
}

# deploy_function NAME TRIGGER_FLAGS... deploys one function from this folder, with its row of
# FUNCTION_SETTINGS.
deploy_function() {
  local name=$1 row fn entry_point memory cpu concurrency timeout max_instances
  shift
  row=$(awk -v name="$name" '$1 == name' <<<"$FUNCTION_SETTINGS")
  read -r fn entry_point memory cpu concurrency timeout max_instances <<<"$row"
  [[ $fn == "$name" ]] || die "no FUNCTION_SETTINGS row for $name"
  local limits=(--memory="$memory" --concurrency="$concurrency" --timeout="$timeout" --max-instances="$max_instances")
  [[ $cpu == - ]] || limits+=(--cpu="$cpu")
  run gcloud functions deploy "$name" --gen2 --project="$PROJECT" --region="$REGION" \
    --runtime="$RUNTIME" --source=. --entry-point="$entry_point" \
    --service-account="$RUNTIME_SA" --set-env-vars="$ENV_VARS" "${limits[@]}" --quiet "$@"
}

deploy_functions() {
  local event=(--trigger-service-account="$TRIGGER_SA")
  local private=--no-allow-unauthenticated increment_access=--no-allow-unauthenticated
  $PUBLIC_INCREMENTS && increment_access=--allow-unauthenticated

  deploy_function increment --trigger-http "$increment_access"
  deploy_function count --trigger-http "$private"
  deploy_function configure-counter --trigger-http "$private"
  deploy_function increment-from-pubsub "${event[@]}" --trigger-topic="$TOPIC_INCREMENTS" --retry
  # The Firestore trigger lives where the database is.
  deploy_function rollup-on-shard-write \
    --trigger-location="$DATABASE_LOCATION" --trigger-service-account="$TRIGGER_SA" \
    --trigger-event-filters=type=google.cloud.firestore.document.v1.written \
    --trigger-event-filters=database="$DATABASE" \
    --trigger-event-filters-path-pattern=document="$COUNTERS_COLLECTION/{counter}/$SHARDS_COLLECTION/{shard}" \
    --retry
  deploy_function rollup-scheduled "${event[@]}" --trigger-topic="$TOPIC_ROLLUP_TICK"
}

grant_invokers() {
  local fn member
  # Pub/Sub push and Eventarc call the event functions as the trigger account, and only those.
  for fn in increment-from-pubsub rollup-on-shard-write rollup-scheduled; do
    run gcloud functions add-invoker-policy-binding "$fn" --project="$PROJECT" --region="$REGION" \
      --member="serviceAccount:$TRIGGER_SA"
  done
  for member in "${INVOKERS[@]}"; do
    for fn in increment count configure-counter; do
      run gcloud functions add-invoker-policy-binding "$fn" --project="$PROJECT" --region="$REGION" \
        --member="$member"
    done
  done
  if ! $PUBLIC_INCREMENTS; then
    # Private again after a public deployment: drop allUsers (fails harmlessly when it is not there).
    run gcloud functions remove-invoker-policy-binding increment --project="$PROJECT" --region="$REGION" \
      --member=allUsers || true
  fi
}

ensure_scheduler_job() {
  local verb=update
  missing gcloud scheduler jobs describe "$SCHEDULER_JOB" --project="$PROJECT" --location="$REGION" && verb=create
  # Every minute, at least once: RollupScheduled rolls up the counters that changed.
  run gcloud scheduler jobs "$verb" pubsub "$SCHEDULER_JOB" --project="$PROJECT" --location="$REGION" \
    --schedule='* * * * *' --time-zone=Etc/UTC --topic="$TOPIC_ROLLUP_TICK" --message-body=tick
}

print_urls() {
  local fn
  for fn in increment count configure-counter; do
    run gcloud functions describe "$fn" --project="$PROJECT" --region="$REGION" --format='value(url)'
  done
  note "Firestore security rules: firebase deploy --only firestore:rules --project $PROJECT (README.md)"
}

main() {
  cd "$(dirname "$0")/.."
  parse_flags "$@"
  RUNTIME=$(go_runtime)
  RUNTIME_SA="$RUNTIME_SA_NAME@$PROJECT.iam.gserviceaccount.com"
  TRIGGER_SA="$TRIGGER_SA_NAME@$PROJECT.iam.gserviceaccount.com"
  COUNTERS_COLLECTION=$(env_or_default COUNTERS_COLLECTION counters)
  ROLLUPS_COLLECTION=$(env_or_default ROLLUPS_COLLECTION rollups)
  DEDUPE_COLLECTION=$(env_or_default DEDUPE_COLLECTION counter_dedupe)
  ENV_VARS="GOOGLE_CLOUD_PROJECT=$PROJECT,FIRESTORE_DATABASE=$DATABASE"
  local name
  for name in "${OPTIONAL_ENV[@]}"; do
    if [[ -n ${ENV_VALUES[$name]:-} ]]; then ENV_VARS+=",$name=${ENV_VALUES[$name]}"; fi
  done

  if $DEAD_LETTER_ONLY; then
    attach_dead_letter
    return
  fi
  enable_apis
  ensure_database
  ensure_identities
  ensure_topics
  configure_fields
  deploy_functions
  attach_dead_letter
  grant_invokers
  ensure_scheduler_job
  print_urls
}

main "$@"
