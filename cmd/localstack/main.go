// Command localstack runs the counters on the Firestore and Pub/Sub emulators, every function at
// http://127.0.0.1:$PORT/<EntryPoint>.
//
//	localstack                 run until Ctrl-C or SIGTERM (make run)
//	localstack exec -- CMD...  run CMD against fresh emulators, exit as CMD did (make test)
//
// Settings: docs/development.md and localstack.OptionsFromEnv.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/shardcount/counters" // registers every function
	"github.com/shardcount/counters/functions"
	"github.com/shardcount/counters/internal/commitlog"
	"github.com/shardcount/counters/internal/localstack"
)

func main() {
	// Stop with our parent rather than orphan the emulators.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	if len(os.Args) > 1 && os.Args[1] == localstack.ServeFunctionsCommand {
		// SIGTERM is left to package functions, as in production.
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

// serveFunctions serves every registered function on 127.0.0.1:$PORT, with the push paths of
// localstack.RegisterPushPaths; COMMIT_LOG set records every commit to that file, READ_LOG every read.
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
