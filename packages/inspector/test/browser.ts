import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium (installed by scripts/ensure-chromium.sh). */
export const CHROMIUM = '/usr/bin/chromium';

/** Flags for a closed network: no background fetches, no QUIC, no first-run work. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** One headless chromium with a fresh profile folder; `close()` ends it and removes the folder. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(join(tmpdir(), 'engram-inspect-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
