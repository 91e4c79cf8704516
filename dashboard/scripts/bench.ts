/**
 * `npm run bench:dashboard`: builds the dashboard when stale, starts the service (in memory, on
 * loopback), and prints the dashboard's budget: the first load's compressed bytes as served, and
 * time to interactive in headless Chromium (cold cache, and warm), as the median of
 * DASHBOARD_BENCH_RUNS loads (default 7). Exits 1 when over budget.
 */
import { startService } from "../../bench/Processes.ts"
import { BUDGET_BYTES, BUDGET_MS, type Interactive, loadOnce, median, servedBytes } from "./budget.ts"
import { ensureDashboard } from "./build.ts"
import { launch } from "./chromium.ts"

const runs = Math.max(1, Number(process.env.DASHBOARD_BENCH_RUNS ?? 7) || 7)
const out = (line: string) => process.stdout.write(`${line}\n`)
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

const { record, built } = await ensureDashboard()
out(`dashboard bundle ${built ? "built" : "up to date"}: ${record.script}, ${record.stylesheet}`)
for (const asset of record.assets) out(`  ${asset.name.padEnd(24)} ${kb(asset.bytes).padStart(9)} raw ${kb(asset.gzip).padStart(9)} gzip ${kb(asset.brotli).padStart(9)} brotli`)

const service = await startService({ SERVICE_API_KEYS: `bench_dashboard_key_${Date.now()}=proj_bench` })
const browser = await launch()
let failed = false
try {
  const files = await servedBytes(service.baseUrl)
  out("served (Accept-Encoding: br, gzip):")
  for (const file of files) out(`  ${file.path.padEnd(44)} ${kb(file.bytes).padStart(9)} ${file.encoding.padEnd(8)} ${file.cacheControl}`)
  const scriptsAndStyles = files.filter((file) => /\.(js|css)$/.test(file.path)).reduce((sum, file) => sum + file.bytes, 0)
  const firstLoad = files.reduce((sum, file) => sum + file.bytes, 0)
  out(`first load: ${kb(scriptsAndStyles)} compressed JS+CSS (${kb(firstLoad)} with index.html); budget ${kb(BUDGET_BYTES)}`)
  if (scriptsAndStyles >= BUDGET_BYTES) failed = true

  // One warm-up load, not counted: Chromium's own start-up work is not the page's.
  await loadOnce(browser.context, service.baseUrl, true)
  const cold: Array<Interactive> = []
  const warm: Array<Interactive> = []
  for (let run = 0; run < runs; run++) cold.push(await loadOnce(browser.context, service.baseUrl, true))
  for (let run = 0; run < runs; run++) warm.push(await loadOnce(browser.context, service.baseUrl, false))
  const coldMs = median(cold.map((load) => load.interactiveMs))
  const warmMs = median(warm.map((load) => load.interactiveMs))
  out(
    `time to interactive (navigation start to the sign-in form ready), headless Chromium, median of ${runs}: ` +
      `cold ${coldMs.toFixed(0)} ms [${Math.min(...cold.map((l) => l.interactiveMs)).toFixed(0)}-${Math.max(...cold.map((l) => l.interactiveMs)).toFixed(0)}], ` +
      `warm ${warmMs.toFixed(0)} ms; DOMContentLoaded cold ${median(cold.map((l) => l.domContentLoadedMs)).toFixed(0)} ms; budget ${BUDGET_MS} ms`
  )
  out(`browser received ${kb(cold[0]?.transferredBytes ?? 0)} of compressed JS+CSS on a cold load`)
  if (coldMs >= BUDGET_MS) failed = true
} finally {
  await browser.close()
  await service.stop()
}
out(failed ? "dashboard budget: OVER" : "dashboard budget: met")
process.exitCode = failed ? 1 : 0
