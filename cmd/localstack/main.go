// Command localstack runs the whole counters system on one machine, against the real Google
// emulators: the Firestore and Pub/Sub emulators, and every function served by the Functions
// Framework at http://127.0.0.1:$PORT/<EntryPoint>.
//
//	localstack                 run the stack until Ctrl-C or SIGTERM (what `make run` does)
//	localstack exec -- CMD...  start the emulators on free ports, run CMD with their addresses in
//	                           FIRESTORE_EMULATOR_HOST and PUBSUB_EMULATOR_HOST, stop them, exit as CMD did
//	                           (what `make test` does)
//
// Environment: PORT (8080), GOOGLE_CLOUD_PROJECT (demo-counters), FIRESTORE_PORT (8081),
// PUBSUB_PORT (8085), AUTH_PORT (the Firebase Auth emulator, 9099; LOCALSTACK_AUTH=false leaves it
// out), APP_PORT (the live example app, 8000), FIRESTORE_RULES (security rules loaded into the
// Firestore emulator, the repository's firestore.example-app.rules: the example app's own rules with
// the counters' block), LOCALSTACK_WEB (the npm project with
// firebase-tools and the example app, the repository's web/), LOCALSTACK_LOGS (directory for emulator
// logs, .localstack), LOCALSTACK_TICK (how often the stand-in for Cloud Scheduler ticks
// RollupScheduled, 1m), LOCALSTACK_INSTANCES (how many functions processes serve behind a
// least-outstanding-requests balancer on PORT, 1), LOCALSTACK_FUNCTIONS_FIRESTORE (the Firestore
// address the functions use, if not the emulator's).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/shardcount/counters" // registers every function, as the deployed root package does
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/localstack"
)

func main() {
	// If whatever started us (make, a shell) dies, stop as on SIGTERM rather than orphan the emulators.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	if len(os.Args) > 1 && os.Args[1] == localstack.ServeFunctionsCommand {
		// SIGTERM is the functions' own, as in production: a graceful stop once they serve (see
		// package functions), the default exit before.
		if err := serveFunctions(); err != nil {
			fmt.Fprintln(os.Stderr, "localstack:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch {
	case len(os.Args) == 1:
		var opts localstack.Options
		if opts, err = localstack.OptionsFromEnv(); err == nil {
			err = localstack.Run(ctx, opts, os.Stdout)
		}
	case os.Args[1] == "exec" && len(os.Args) > 3 && os.Args[2] == "--":
		var (
			opts localstack.Options
			code int
		)
		if opts, err = localstack.OptionsFromEnv(); err == nil {
			code, err = localstack.Exec(ctx, opts, os.Args[3:])
		}
		if err == nil {
			stop()
			os.Exit(code)
		}
	default:
		err = errors.New("usage: localstack | localstack exec -- COMMAND [ARG...]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localstack:", err)
		os.Exit(1)
	}
}

// serveFunctions is the child process that serves every registered function, as Cloud Functions
// does, bound to loopback (LOCAL_ONLY=true) on $PORT. Pub/Sub-triggered functions are also served
// below /<EntryPoint>/, where the emulator's push subscriptions deliver with the topic in the path
// (see localstack.RegisterPushPaths). With COMMIT_LOG set (the load harness), the functions' Firestore
// client records every commit to that file.
func serveFunctions() error {
	recordCommits, err := commitlog.OptionFromEnv()
	if err != nil {
		return err
	}
	if recordCommits != nil {
		functions.UseFirestoreOptions(recordCommits)
	}
	if err := localstack.RegisterPushPaths(context.Background()); err != nil {
		return err
	}
	port := os.Getenv("PORT")
	if err := funcframework.StartHostPort("127.0.0.1", port); err != nil {
		return fmt.Errorf("serve functions on port %s: %w", port, err)
	}
	return nil
}
