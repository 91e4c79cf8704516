/**
 * Builds the dashboard (dashboard/src) into dashboard/dist with esbuild: one hashed script and
 * one hashed stylesheet under `assets/`, each with precompressed `.br` and `.gz` copies, and an
 * `index.html` naming them. `build.json` records a digest of every input the bundle was made
 * from, so that `ensureDashboard` (run before `npm start` and `npm test`) rebuilds only when a
 * source, the client library, the catalog, a bundled package or this script changed.
 *
 *   node dashboard/scripts/build.ts            build when stale
 *   node dashboard/scripts/build.ts --force    build anyway
 *
 * Prints one line: what was built, its compressed size, and how long it took.
 */
import { build, type Metafile } from "esbuild"
import { createHash } from "node:crypto"
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises"
import { basename, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { brotliCompress, constants as zlib, gzip } from "node:zlib"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
export const DIST = join(ROOT, "dashboard/dist")
const ASSETS = join(DIST, "assets")
const ENTRY = join(ROOT, "dashboard/src/main.tsx")
const SELF = fileURLToPath(import.meta.url)
const TEMPLATE = join(ROOT, "dashboard/src/index.html")

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

export interface AssetSize {
  readonly name: string
  readonly bytes: number
  readonly gzip: number
  readonly brotli: number
}

export interface BuildRecord {
  /** Digest of every input file's path and content (and of this script). */
  readonly inputsDigest: string
  /** Root-relative paths of the inputs, as esbuild's metafile listed them. */
  readonly inputs: ReadonlyArray<string>
  readonly script: string
  readonly stylesheet: string
  readonly assets: ReadonlyArray<AssetSize>
  readonly builtAt: string
}

const digestOf = async (files: ReadonlyArray<string>): Promise<string> => {
  const hash = createHash("sha256")
  for (const file of [...files, relative(ROOT, SELF), relative(ROOT, TEMPLATE)].toSorted()) {
    hash.update(file).update("\0")
    // A vanished input makes the digest differ, which is what a rebuild needs.
    hash.update(await readFile(join(ROOT, file)).catch(() => "missing")).update("\0")
  }
  return hash.digest("hex")
}

export const readRecord = async (): Promise<BuildRecord | undefined> => {
  try {
    return JSON.parse(await readFile(join(DIST, "build.json"), "utf8")) as BuildRecord
  } catch {
    return undefined
  }
}

/** Whether dist is missing or was built from inputs that have changed since. */
export const isStale = async (): Promise<boolean> => {
  const record = await readRecord()
  if (record === undefined) return true
  const present = await readdir(ASSETS).catch(() => [] as Array<string>)
  if (!present.includes(record.script) || !present.includes(record.stylesheet)) return true
  return (await digestOf(record.inputs)) !== record.inputsDigest
}

const writeAtomically = async (path: string, content: string | Uint8Array) => {
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, content)
  await rename(temporary, path)
}

const compressed = async (path: string, content: Uint8Array): Promise<AssetSize> => {
  const [br, gz] = await Promise.all([
    brotli(content, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: content.byteLength } }),
    gzipAsync(content, { level: 9 })
  ])
  await Promise.all([writeAtomically(path, content), writeAtomically(`${path}.br`, br), writeAtomically(`${path}.gz`, gz)])
  return { name: basename(path), bytes: content.byteLength, gzip: gz.byteLength, brotli: br.byteLength }
}

const inputsOf = (metafile: Metafile): ReadonlyArray<string> =>
  // esbuild names inputs relative to its working directory, which is ROOT here.
  Object.keys(metafile.inputs).filter((input) => !input.includes(":")).toSorted()

export const buildDashboard = async (): Promise<BuildRecord> => {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { app: ENTRY },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["chrome120", "firefox120", "safari17"],
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    entryNames: "[name]-[hash]",
    outdir: ASSETS,
    write: false,
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
    define: { "process.env.NODE_ENV": "\"production\"" }
  })
  await mkdir(ASSETS, { recursive: true })
  const assets: Array<AssetSize> = []
  for (const file of result.outputFiles) assets.push(await compressed(file.path, file.contents))
  const script = assets.find((asset) => asset.name.endsWith(".js"))?.name
  const stylesheet = assets.find((asset) => asset.name.endsWith(".css"))?.name
  if (script === undefined || stylesheet === undefined) throw new Error("the build made no script or no stylesheet")

  const html = (await readFile(TEMPLATE, "utf8"))
    .replace("%SCRIPT%", `/dashboard/assets/${script}`)
    .replace("%STYLESHEET%", `/dashboard/assets/${stylesheet}`)
  await compressed(join(DIST, "index.html"), new TextEncoder().encode(html))

  const inputs = inputsOf(result.metafile)
  const record: BuildRecord = {
    inputsDigest: await digestOf(inputs),
    inputs,
    script,
    stylesheet,
    assets,
    builtAt: new Date().toISOString()
  }
  await writeAtomically(join(DIST, "build.json"), JSON.stringify(record, null, 2) + "\n")

  // Files of earlier builds go; a page still open on one reloads index.html on its next visit.
  const keep = new Set(assets.flatMap((asset) => [asset.name, `${asset.name}.br`, `${asset.name}.gz`]))
  for (const name of await readdir(ASSETS)) if (!keep.has(name) && !name.endsWith(".tmp")) await rm(join(ASSETS, name), { force: true })
  return record
}

/** Builds when stale; answers the record of the build now in dist and whether it was made now. */
export const ensureDashboard = async (force = false): Promise<{ readonly record: BuildRecord; readonly built: boolean }> => {
  if (!force && !(await isStale())) {
    const record = await readRecord()
    if (record !== undefined) return { record, built: false }
  }
  return { record: await buildDashboard(), built: true }
}

const kilobytes = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now()
  const { record, built } = await ensureDashboard(process.argv.includes("--force"))
  const brotliTotal = record.assets.reduce((sum, asset) => sum + asset.brotli, 0)
  const gzipTotal = record.assets.reduce((sum, asset) => sum + asset.gzip, 0)
  process.stdout.write(
    `dashboard: ${built ? "built" : "up to date"} (${record.script}, ${record.stylesheet}): ` +
      `first load ${kilobytes(brotliTotal)} brotli, ${kilobytes(gzipTotal)} gzip ` +
      `in ${Math.round(performance.now() - started)} ms\n`
  )
}
