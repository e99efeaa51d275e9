// A node run that never ends: the event loop stays busy, and a detached descendant in its own
// process group holds the output pipe, as a browser left open would.
import { spawn } from 'node:child_process';

const holder = spawn('sleep', ['600'], { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
holder.unref();
console.log(`holder ${holder.pid}`);
setInterval(() => {}, 1000);
