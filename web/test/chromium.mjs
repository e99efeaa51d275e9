// Headless Chromium for the browser tests: Debian's chromium (CHROMIUM_PATH overrides), driven by
// playwright-core, which downloads no browser.
import { chromium } from 'playwright-core';

const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Launches headless Chromium; close it with closeBrowser. */
export function launchChromium() {
  // launch (not launchPersistentContext): Playwright owns the temporary profile and removes it after
  // the browser exited, and browser.process() lets a hung close be ended. Removing a profile ourselves
  // raced Chromium's last writes (ENOTEMPTY), and since t.after hooks run in registration order and
  // stop at the first that throws, the browser was then never closed and node never exited.
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Closes the browser, killing its process if it has not exited within 30 s (a hung close would
 * otherwise keep this file's process, and so the whole run, alive). */
export async function closeBrowser(browser) {
  let timer;
  const hung = new Promise((resolve) => { timer = setTimeout(resolve, 30_000, 'hung'); });
  const outcome = await Promise.race([browser.close().then(() => 'closed'), hung]);
  clearTimeout(timer);
  if (outcome === 'hung') {
    browser.process()?.kill('SIGKILL');
    throw new Error('Chromium did not close within 30 s: killed');
  }
}
