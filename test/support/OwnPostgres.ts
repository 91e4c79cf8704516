/**
 * A Postgres server of a test's own, that the test may stop and start (the shared server must
 * not go away under the other suites): initdb and pg_ctl from /usr/lib/postgresql/<version>/bin
 * into a temporary directory, on a free port, fsync off. Running as root, the server runs as
 * the `postgres` user (Postgres refuses root). Undefined when no binaries are installed.
 */
import { execFile, execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort } from "./Ports.ts"

const run = promisify(execFile)

export interface OwnPostgres {
  readonly url: string
  readonly stop: () => Promise<void>
  readonly start: () => Promise<void>
  readonly destroy: () => Promise<void>
  /**
   * Freezes the server as a hung host would (SIGSTOP to the postmaster, then to its children):
   * connections stay open and nothing answers. `thaw` (SIGCONT) undoes it; call it in a
   * `finally`, and `destroy` thaws first anyway.
   */
  readonly freeze: () => void
  readonly thaw: () => void
}

/** The children of `pid`, from /proc (no pgrep needed). */
const childrenOf = (pid: number): ReadonlyArray<number> =>
  readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).flatMap((entry) => {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      // The fourth field, after the command in parentheses (which may hold spaces).
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return parent === pid ? [Number(entry)] : []
    } catch {
      return []
    }
  })

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name)
  } catch {
    // Gone meanwhile.
  }
}

const binaries = (): string | undefined => {
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "pg_ctl"))).toSorted((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin")
}

const postgresUser = (): { readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
  return { uid, gid }
}

export const ownPostgresAvailable: boolean = binaries() !== undefined

export const startOwnPostgres = async (): Promise<OwnPostgres> => {
  const bin = binaries()
  if (bin === undefined) throw new Error("no Postgres binaries under /usr/lib/postgresql")
  const user = postgresUser()
  const dir = mkdtempSync(join(tmpdir(), "own-pg-"))
  if (user !== undefined) chownSync(dir, user.uid, user.gid)
  const data = join(dir, "data")
  const port = await freePort()
  const as = user === undefined ? {} : { uid: user.uid, gid: user.gid }
  await run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"], { ...as, cwd: dir })
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`
  const start = async () => {
    await run(join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "30", "start"], { ...as, cwd: dir })
  }
  const stop = async () => {
    await run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"], { ...as, cwd: dir })
  }
  await start()
  const postmaster = () => Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n", 1)[0])
  let frozen: ReadonlyArray<number> = []
  // The postmaster first, so that it forks no child after the list is taken.
  const freeze = () => {
    const pid = postmaster()
    signal(pid, "SIGSTOP")
    frozen = [pid, ...childrenOf(pid)]
    for (const child of frozen.slice(1)) signal(child, "SIGSTOP")
  }
  const thaw = () => {
    for (const pid of frozen.toReversed()) signal(pid, "SIGCONT")
    frozen = []
  }
  return {
    freeze,
    thaw,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: async () => {
      thaw()
      await run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"], { ...as, cwd: dir }).catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
