/**
 * Every start-up failure is one line naming its cause and a non-zero exit (decisions.md section
 * 9), through a real process: a database that does not answer or does not exist, a port in
 * use, a schema migrated by a newer version, a secret key that does not open the data. And a
 * clean stop (SIGTERM) exits 0 with a log line.
 */
import { spawn } from "node:child_process"
import { createServer, type Server } from "node:net"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { makeKeyRing } from "../../infra/access/Secrets.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql, TEST_DATABASE_URL } from "../support/Database.ts"
import { runCli, startCli, stopWhileLoading } from "../support/Cli.ts"
import { freePort } from "../support/Ports.ts"
import { startProcess } from "../support/Service.ts"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

const KEY_A = Buffer.alloc(32, 21).toString("base64")
const KEY_B = Buffer.alloc(32, 22).toString("base64")

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const serve = (env: Readonly<Record<string, string>>): Promise<Run> =>
  runCli(["serve"], { SERVICE_HOST: "127.0.0.1", SERVICE_API_KEYS: "test_key_unpinned_0001=proj_test", ...env })

const oneLine = (run: Run, ...fragments: ReadonlyArray<string>) => {
  expect(run.code).not.toBe(0)
  expect(run.code).not.toBeNull()
  const lines = run.stderr.split("\n").filter((line) => line.trim() !== "")
  expect(lines).toHaveLength(1)
  for (const fragment of fragments) expect(lines[0]).toContain(fragment)
  return lines[0]!
}

const databaseUrl = (name: string) => {
  const url = new URL(TEST_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

describe("start-up failures", () => {
  it("a database that does not answer", async () => {
    const run = await serve({ SERVICE_DATABASE_URL: "postgres://postgres@127.0.0.1:1/nowhere", SERVICE_SECRET_KEY: KEY_A, SERVICE_PORT: "0" })
    oneLine(run, "SERVICE_DATABASE_URL", "127.0.0.1:1/nowhere", "unreachable", "connection refused")
  })

  // docs/configuration.md: credentials are redacted. A URL refused at start is quoted without
  // what lies between "//" and "@" (a password, a token as the user name).
  it("a URL it refuses is quoted without its credentials", async () => {
    const variables = ["SERVICE_BASE_URL", "SERVICE_SLACK_API_URL", "SERVICE_GITHUB_API_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"]
    for (const variable of variables) {
      const unparsable = await serve({ [variable]: "http://u:PASS@x y", SERVICE_PORT: "0" })
      expect(oneLine(unparsable, variable)).toBe(`error: ${variable}: expected an http(s) URL, got "http://[redacted]@x y"`)
      const otherScheme = await serve({ [variable]: "ftp://TOKEN@files.example/x", SERVICE_PORT: "0" })
      expect(oneLine(otherScheme, variable)).toBe(`error: ${variable}: expected an http(s) URL, got "ftp://[redacted]@files.example/x"`)
    }
    // Whatever the password holds: a slash, a quote, a space.
    const odd = await serve({ SERVICE_BASE_URL: 'http://u:P/A"S S@x y', SERVICE_PORT: "0" })
    expect(oneLine(odd, "SERVICE_BASE_URL")).toBe(`error: SERVICE_BASE_URL: expected an http(s) URL, got "http://[redacted]@x y"`)
  })

  // Outside audit: a query string was quoted whole (`?api_key=…`), and a valid endpoint with one
  // was taken, its token then logged with every failed export (and the signal path appended
  // inside the query). These are base URLs: a query has no place in them.
  it("a URL with a query is refused without quoting it; a refused URL is quoted without its query", async () => {
    for (const variable of ["SERVICE_BASE_URL", "SERVICE_GITHUB_API_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"]) {
      const withQuery = await serve({ [variable]: "https://collector.example/p?api_key=SECRETCANARY", SERVICE_PORT: "0" })
      expect(oneLine(withQuery, variable)).toBe(`error: ${variable}: must not contain a query or a fragment (put credentials in headers)`)
      const unparsable = await serve({ [variable]: "https://collector.example:99999/?api_key=SECRETCANARY", SERVICE_PORT: "0" })
      expect(oneLine(unparsable, variable)).toBe(`error: ${variable}: expected an http(s) URL, got "https://collector.example:99999/?[redacted]"`)
    }
  })

  // The headers carry a collector's API key: a malformed pair is named by its place, never quoted.
  it("a malformed OTLP header pair is refused without quoting it", async () => {
    const run = await serve({ OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=a,Authorization Bearer tok-SECRET", SERVICE_PORT: "0" })
    expect(oneLine(run, "OTEL_EXPORTER_OTLP_HEADERS")).toBe(
      'error: OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs, comma separated; pair 2 has no header name before "="'
    )
  })

  it("a port already in use", async () => {
    const blocker: Server = createServer()
    const port = await freePort()
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve))
    try {
      const run = await serve({ SERVICE_PORT: String(port) })
      oneLine(run, "SERVICE_PORT", `port ${port}`, "already in use")
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
    }
  })

  it("a port already in use hands out no development key for a service that never started", async () => {
    const blocker: Server = createServer()
    const port = await freePort()
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve))
    try {
      const run = await serve({ SERVICE_PORT: String(port), SERVICE_API_KEYS: "" })
      oneLine(run, "SERVICE_PORT", `port ${port}`, "already in use")
      expect(run.stdout).not.toMatch(/development API key/i)
      expect(run.stdout).not.toMatch(/sk_[A-Za-z0-9]{20}/)
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
    }
  })
})

describe.skipIf(!postgresAvailable)("start-up failures on Postgres", () => {
  const databases: Array<string> = []
  afterAll(async () => {
    for (const url of databases) await dropTestDatabase(url)
  })

  it("a database that does not exist", async () => {
    const run = await serve({ SERVICE_DATABASE_URL: databaseUrl("no_such_database_here"), SERVICE_SECRET_KEY: KEY_A, SERVICE_PORT: "0" })
    oneLine(run, "SERVICE_DATABASE_URL", "does not exist", "no_such_database_here")
  })

  it("a schema migrated by a newer version than this code knows", async () => {
    const url = await createTestDatabase("newer")
    databases.push(url)
    const first = await startProcess({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A }, await freePort())
    await first.stop()
    await runSql(url, "INSERT INTO schema_migrations (id, name) VALUES (999999, 'from_the_future')")
    const run = await serve({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A, SERVICE_PORT: "0" })
    oneLine(run, "newer version", "999999_from_the_future")
    // Nothing was applied or changed by the refused start.
    const rows = await runSql<{ n: string }>(url, "SELECT count(*)::text AS n FROM schema_migrations WHERE id = 999999")
    expect(rows[0]?.n).toBe("1")
  })

  it("a secret key that does not open the data sealed in the database", async () => {
    const url = await createTestDatabase("keycheck")
    databases.push(url)
    const first = await startProcess({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A }, await freePort())
    await first.stop()
    const run = await serve({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_B, SERVICE_PORT: "0" })
    // The key check's line: it runs before anything else opens sealed data (the idempotency key).
    oneLine(run, "SERVICE_SECRET_KEY: it does not open the data sealed in this database")
    // The right key as the previous one (a rotation under way) starts.
    const rotating = await startProcess({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_B, SERVICE_SECRET_KEY_PREVIOUS: KEY_A }, await freePort())
    await rotating.stop()
  })

  it("an idempotency key that the secret key does not open", async () => {
    const url = await createTestDatabase("idemkey")
    databases.push(url)
    const first = await startProcess({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A }, await freePort())
    await first.stop()
    // The key check still opens; the idempotency key was sealed under another key.
    const foreign = makeKeyRing(new Uint8Array(Buffer.from(KEY_B, "base64"))).seal(Buffer.alloc(32, 1).toString("base64url"))
    await runSql(url, `UPDATE secret_idempotency_key SET sealed = '${foreign}'`)
    const run = await serve({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A, SERVICE_PORT: "0" })
    oneLine(run, "SERVICE_SECRET_KEY: it does not open the idempotency key sealed in this database")
  })

  // Every variable is read trimmed (infra/Settings.ts); the port was read a second time, by the
  // MCP settings, untrimmed, and failed start-up with a schema error.
  it("a port with spaces around it is the port", async () => {
    const port = await freePort()
    const child = await startProcess({ SERVICE_PORT: ` ${port} ` }, port)
    const exited = new Promise<number | null>((resolve) => child.process.once("exit", (code) => resolve(code)))
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
    child.process.kill("SIGTERM")
    expect(await exited).toBe(0)
  })

  // Before the command line's runtime is loaded (about half a second), Node's own handling of
  // the signal ended the process with 143 and no line (outside audit).
  it("SIGTERM while the program is still loading: exit 0 and a line saying so", async () => {
    // Without the compile cache the program loads for a good half second: the signal lands in it.
    const run = await stopWhileLoading(["serve"], { SERVICE_PORT: String(await freePort()), SERVICE_HOST: "127.0.0.1" }, "SIGTERM")
    expect(run.code).toBe(0)
    // Its own line if the signal is handled while loading; the runtime's if it is handled once
    // the runtime's handlers are in (a signal waits for the event loop's next turn).
    expect(`${run.stdout}${run.stderr}`).toMatch(/stopped before start-up finished \(SIGTERM\)|stopped: requests answered, leases released/)
  })

  // Outside audit: an operator command stopped before its work was done exited 0 with no word,
  // so `migrate && …` or a supervisor read it as done. Only `serve` and `events tail` end
  // cleanly on a signal (that is how they are stopped); any other command says it was
  // interrupted and exits 128 + the signal's number.
  describe("a command stopped before its work is done", () => {
    /** A "database" that takes the connection and never answers: the command waits on it. */
    const silentDatabase = async () => {
      const sockets: Array<import("node:net").Socket> = []
      const server = createServer((socket) => void sockets.push(socket))
      const port = await freePort()
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
      return {
        url: `postgres://postgres@127.0.0.1:${port}/silent`,
        close: () => {
          for (const socket of sockets) socket.destroy()
          return new Promise((resolve) => server.close(resolve))
        }
      }
    }
    const env = (url: string) => ({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A })

    it.each([
      ["migrate", ["migrate"], "SIGINT", 130],
      ["keys create", ["keys", "create", "--project", "proj_x"], "SIGTERM", 143],
      ["secrets reseal", ["secrets", "reseal"], "SIGINT", 130]
    ] as const)("%s (%j), stopped by %s while it waits for the database: exit %i and a line saying so", async (_, args, signal, code) => {
      const database = await silentDatabase()
      try {
        const child = startCli(args, env(database.url))
        // Loaded and waiting on the database (the runtime's own handlers are in).
        await new Promise((resolve) => setTimeout(resolve, 2_500))
        child.process.kill(signal)
        const run = await child.finished
        expect(run.code).toBe(code)
        expect(run.stderr).toContain(`interrupted (${signal})`)
      } finally {
        await database.close()
      }
    }, 30_000)

    // Outside audit: a flag's value before the subcommand (`events --log-level info tail`) was
    // taken for the subcommand, so a stopped tail exited 130 as "events info".
    it("events tail with --log-level before its subcommand, stopped while it waits: exit 0, as events tail", async () => {
      const database = await silentDatabase()
      try {
        const child = startCli(["events", "--log-level", "info", "tail"], env(database.url))
        await new Promise((resolve) => setTimeout(resolve, 2_500))
        child.process.kill("SIGINT")
        const run = await child.finished
        expect(run.stderr).not.toContain("interrupted")
        expect(run.code).toBe(0)
      } finally {
        await database.close()
      }
    }, 30_000)

    it("migrate, stopped while the program is still loading: not 0 either", async () => {
      const run = await stopWhileLoading(["migrate"], env("postgres://postgres@127.0.0.1:1/nowhere"), "SIGINT")
      expect(run.code).toBe(130)
      expect(run.stderr).toContain("interrupted (SIGINT)")
    })
  })

  // Outside audit: SIGTERM to `npm start` (a supervisor or `docker stop` signalling its main
  // process) ended npm and its shell while the service went on listening, orphaned, holding its
  // lease, with no clean stop.
  it("SIGTERM to `npm start` reaches the service: it stops cleanly and frees its port", async () => {
    const port = await freePort()
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const npm = spawn("npm", ["start"], { cwd: ROOT, env: { ...clean, SERVICE_PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    npm.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    npm.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const deadline = Date.now() + 30_000
    while (!output.includes("listening on") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(output).toContain("listening on")
    npm.kill("SIGTERM")
    // The service itself stops (its line comes through npm's pipes), and nothing listens after.
    const stopped = Date.now() + 15_000
    while (!output.includes("stopped: requests answered, leases released") && Date.now() < stopped) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(output).toContain("stopped: requests answered, leases released")
    const refused = await fetch(`http://127.0.0.1:${port}/healthz`).then(() => false, () => true)
    expect(refused).toBe(true)
  }, 60_000)

  // Outside audit: a new database and no key anywhere started silently, every request a 401.
  it("with a database and no key anywhere, start-up says how to make one; with a key, it does not", async () => {
    const url = await createTestDatabase("nokeys")
    databases.push(url)
    const env = { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A, SERVICE_API_KEYS: "" }
    const HINT = "no API key exists yet: every request is refused (401) until one does"
    const waitFor = async (child: { output: () => string }, text: string) => {
      for (let i = 0; i < 50 && !child.output().includes(text); i++) await new Promise((resolve) => setTimeout(resolve, 100))
      return child.output()
    }
    const bare = await startProcess(env, await freePort())
    expect(await waitFor(bare, HINT)).toContain("keys create --project")
    await bare.stop()
    expect((await runCli(["keys", "create", "--project", "p1"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A })).code).toBe(0)
    const keyed = await startProcess(env, await freePort())
    // The hint would follow the listening line at once; a moment is enough to see it is not there.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(keyed.output()).not.toContain(HINT)
    await keyed.stop()
  }, 60_000)

  it("SIGTERM stops cleanly: exit 0 and a line saying so", async () => {
    const url = await createTestDatabase("sigterm")
    databases.push(url)
    const child = await startProcess({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: KEY_A }, await freePort())
    const exited = new Promise<number | null>((resolve) => child.process.once("exit", (code) => resolve(code)))
    child.process.kill("SIGTERM")
    expect(await exited).toBe(0)
    expect(child.output()).toContain("stopped: requests answered, leases released")
    // Its runner lease is gone at once: peers need not wait for it to expire.
    const runners = await runSql<{ n: string }>(url, "SELECT count(*)::text AS n FROM runners")
    expect(runners[0]?.n).toBe("0")
  })
})
