# Runs many gcloud command lines (JSON on stdin: a list of argument lists, without "gcloud") through
# one process of the installed gcloud's own CLI, as `gcloud ARGS...` would run each: the parser, then
# the command until it needs credentials. Prints one JSON line per command: {"out": what it wrote,
# "code": its exit status}.
# One process instead of one per command: gcloud spends about a second of CPU starting up.
# GCLOUD_LIB is the SDK's lib folder (that of gcloud.py, the launcher, which sets up sys.path).
import json, os, sys, tempfile
root = os.environ["GCLOUD_LIB"]
sys.path.insert(0, root)
sys.path.insert(0, os.path.join(root, "third_party"))
import gcloud  # the launcher: fixes sys.path and the google package as gcloud does
gcloud._fix_google_module()
sys.path = gcloud.reorder_sys_path(sys.path)
from googlecloudsdk import gcloud_main
cli = gcloud_main.CreateCLI([])
commands = json.load(sys.stdin)
results = sys.__stdout__
saved_out, saved_err = os.dup(1), os.dup(2)
for args in commands:
    with tempfile.TemporaryFile() as capture:
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(capture.fileno(), 1); os.dup2(capture.fileno(), 2)
        code = 0
        try:
            cli.Execute(args)
        except SystemExit as e:  # gcloud exits on usage errors and on missing credentials
            code = e.code if isinstance(e.code, int) else 1
        except BaseException as e:
            code = 1
            print("exception: %r" % (e,), file=sys.stderr)
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(saved_out, 1); os.dup2(saved_err, 2)
        capture.seek(0)
        out = capture.read().decode("utf-8", "replace")
    os.write(saved_out, (json.dumps({"out": out, "code": code}) + "\n").encode())
