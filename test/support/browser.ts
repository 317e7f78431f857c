/**
 * Debian's Chromium, headless, through playwright-core: never a browser a tool downloads itself.
 * It must be at /usr/bin/chromium (QUERYGATE_CHROMIUM names another); without it the tests that need
 * it fail, saying so. QUERYGATE_BROWSER_TESTS=0 skips them on a machine without one; CI never sets it.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.QUERYGATE_CHROMIUM ?? '/usr/bin/chromium';
export const BROWSER_TESTS = process.env.QUERYGATE_BROWSER_TESTS !== '0';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install -y chromium (or QUERYGATE_CHROMIUM=path); QUERYGATE_BROWSER_TESTS=0 skips these tests`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
