// Debian's Chromium, headless, driven by playwright-core (which downloads no browser of its own).
// Outside CI a missing Chromium skips the tests that need it, with what to run; under CI=true
// they fail instead, loudly.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { chromium, type BrowserContext } from 'playwright-core';
import { tempDir } from './temp-dir.js';

export const CHROMIUM = '/usr/bin/chromium';

/** Why browser tests cannot run, or false. */
export const chromiumMissing: string | false = existsSync(CHROMIUM)
  ? false
  : `Chromium is not installed at ${CHROMIUM}: run \`bash test/services/ensure.sh\` as root (installs Debian's chromium)`;

/** Test options: skip outside CI when Chromium is missing (under CI the test runs and fails). */
export const needsChromium = { skip: process.env.CI === 'true' ? false : chromiumMissing };

export function requireChromium(): void {
  if (chromiumMissing) assert.fail(chromiumMissing);
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile directory, removed on close; nothing of its own goes to the network. */
export async function openBrowser(): Promise<Browser> {
  const profile = tempDir('probefleet-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1200, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
