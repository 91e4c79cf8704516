/**
 * Headless Chromium for the dashboard's tests and budget: Debian's /usr/bin/chromium (package
 * `chromium`) driven by playwright-core, with a fresh profile (`--user-data-dir`, which Playwright
 * takes as the persistent context's directory) removed on close.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

export interface Browser {
  readonly context: BrowserContext
  readonly close: () => Promise<void>
}

export const launch = async (): Promise<Browser> => {
  const profile = mkdtempSync(join(tmpdir(), "dashboard-chromium-"))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    permissions: ["clipboard-read", "clipboard-write"]
  })
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    }
  }
}
