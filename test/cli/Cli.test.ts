import { Effect, Layer, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { layerPgEventStore } from "../../infra/eventlog/PgEventStore.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { projections as allProjections } from "../../src/App.ts"
import { runCli, startCli } from "../support/Cli.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url))
const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/**
 * Every stream type the service's code declares (`export const …STREAM_TYPE = "…"`), read from
 * the source, so that the list the command line knows is checked against the code itself.
 */
const declaredStreamTypes = (): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const folder of ["domain", "infra", "mcp", "http", "src"]) {
    for (const file of readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".ts")) continue
      for (const match of readFileSync(join(ROOT, folder, file), "utf8").matchAll(/^export const \w*STREAM_TYPE = "([^"]+)"/gm)) found.add(match[1]!)
    }
  }
  return [...found].toSorted()
}

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `node src/main.ts ...args` to completion with only the given SERVICE_* variables. */
const cli: (args: ReadonlyArray<string>, env?: Readonly<Record<string, string>>) => Promise<Run> = runCli

const COMMANDS = [
  [],
  ["serve"],
  ["migrate"],
  ["keys"],
  ["keys", "create"],
  ["keys", "list"],
  ["keys", "revoke"],
  ["projections"],
  ["projections", "status"],
  ["projections", "replay"],
  ["events"],
  ["events", "tail"]
]

describe("command line without a database", () => {
  it("--help on every command and subcommand exits 0 and prints its usage", async () => {
    // A few at a time: each is a Node start-up.
    for (let i = 0; i < COMMANDS.length; i += 4) {
      const runs = await Promise.all(COMMANDS.slice(i, i + 4).map(async (command) => ({ command, run: await cli([...command, "--help"]) })))
      for (const { command, run } of runs) {
        expect(run.code, command.join(" ")).toBe(0)
        expect(run.stdout).toContain("USAGE")
        expect(run.stdout).toContain(["service", ...command].join(" "))
        expect(run.stdout).toContain("DESCRIPTION")
      }
    }
  })

  it("an operator command that fails says why in one line on stderr and exits 1", async () => {
    const unreachable = { SERVICE_DATABASE_URL: "postgres://postgres@127.0.0.1:1/x", SERVICE_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") }
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, string>, RegExp]> = [
      [["keys", "list"], unreachable, /^error: SERVICE_DATABASE_URL: the database at 127\.0\.0\.1:1\/x is unreachable \(connection refused\)$/],
      [["migrate"], unreachable, /^error: SERVICE_DATABASE_URL: the database at 127\.0\.0\.1:1\/x is unreachable/],
      [["projections", "status"], unreachable, /^error: SERVICE_DATABASE_URL: the database at 127\.0\.0\.1:1\/x is unreachable/],
      [["keys", "create", "--project", "bad project"], {}, /^error: project and user ids must match/],
      [["events", "tail", "--from", "xyz"], {}, /^error: --from takes a position like 731:42$/]
    ]
    const runs = await Promise.all(cases.map(async ([args, env, line]) => ({ args, line, run: await cli(args, env) })))
    for (const { args, line, run } of runs) {
      expect(run.code, args.join(" ")).toBe(1)
      expect(run.stdout, args.join(" ")).toBe("")
      expect(run.stderr.trimEnd().split("\n"), args.join(" ")).toHaveLength(1)
      expect(run.stderr.trimEnd(), args.join(" ")).toMatch(line)
    }
  })

  it("a command line it cannot parse prints its usage and the error on stderr, nothing on stdout, and exits 1", async () => {
    for (const args of [["bogus"], ["keys", "create"], ["events", "tail", "--no-such-flag"]]) {
      const run = await cli(args)
      expect(run.code, args.join(" ")).toBe(1)
      expect(run.stdout, args.join(" ")).toBe("")
      expect(run.stderr, args.join(" ")).toContain("USAGE")
      expect(run.stderr, args.join(" ")).toContain("ERROR")
    }
  })

  // A typo in --stream-type used to be accepted and then matched nothing, forever.
  it("events tail refuses an unknown --stream-type with one line naming the flag, the value and every known stream type", async () => {
    const declared = declaredStreamTypes()
    expect(declared).toContain("execution")
    expect(declared).toContain("webhook-delivery")
    // Refused before the database is looked for (none is set here), and with an unreachable one.
    const unreachable = { SERVICE_DATABASE_URL: "postgres://postgres@127.0.0.1:1/x", SERVICE_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") }
    for (const env of [{}, unreachable]) {
      const run = await cli(["events", "tail", "--stream-type", "executoin"], env)
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      const lines = run.stderr.trimEnd().split("\n")
      expect(lines).toHaveLength(1)
      const refusal = /^error: --stream-type: unknown stream type executoin; known: (.+)$/.exec(lines[0]!)
      expect(refusal, lines[0]).not.toBeNull()
      expect(refusal![1]!.split(", ").toSorted()).toEqual(declared)
    }
    const help = await cli(["events", "tail", "--help"])
    for (const type of declared) expect(help.stdout).toContain(type)
  })

  it("serve without keys in memory mode prints a development key once and listens on loopback only", async () => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, "serve"], { env: { ...clean, SERVICE_PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] })
    try {
      const out = await new Promise<string>((resolve, reject) => {
        let text = ""
        const timer = setTimeout(() => reject(new Error(`not listening in 20 s: ${text}`)), 20_000)
        const take = (chunk: Buffer) => {
          text += chunk.toString()
          if (text.includes("listening on")) {
            clearTimeout(timer)
            resolve(text)
          }
        }
        child.stdout.on("data", take)
        child.stderr.on("data", take)
      })
      // Piped, so JSON lines by default (SERVICE_LOG_FORMAT): the key is a field of one of them.
      expect(out).toMatch(/development API key for project proj_dev.*sk_[A-Za-z0-9]{40}/i)
      expect(out).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/)
    } finally {
      child.kill("SIGTERM")
    }
  })

  /** `serve` in memory mode without keys until it listens: its stdout so far; then it is stopped. */
  const devStart = async (format: "json" | "pretty"): Promise<string> => {
    const running = startCli(["serve"], { SERVICE_PORT: "0", SERVICE_LOG_FORMAT: format })
    try {
      return await new Promise<string>((resolve, reject) => {
        let text = ""
        const timer = setTimeout(() => reject(new Error(`not listening in 20 s: ${text}`)), 20_000)
        running.process.stdout?.on("data", (chunk: Buffer) => {
          text += chunk.toString()
          if (text.includes("listening on")) {
            clearTimeout(timer)
            // The rest of the turn's lines (they are written together).
            setTimeout(() => resolve(text), 100)
          }
        })
      })
    } finally {
      running.process.kill("SIGTERM")
      await running.finished
    }
  }

  it("the development key's line follows SERVICE_LOG_FORMAT: a JSON object under json, plain text under pretty", async () => {
    const json = (await devStart("json")).split("\n").filter((line) => line.trim() !== "")
    const objects = json.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>
      } catch {
        throw new Error(`not one JSON object per line: ${line}`)
      }
    })
    const keyLines = objects.filter((line) => typeof line.apiKey === "string")
    expect(keyLines).toHaveLength(1)
    expect(keyLines[0]).toMatchObject({ level: "info", projectId: "proj_dev", apiKey: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/) })
    expect(String(keyLines[0]?.message)).toMatch(/development API key/i)
    const pretty = await devStart("pretty")
    expect(pretty).toMatch(/^Development API key for project proj_dev .*: sk_[A-Za-z0-9]{40}$/m)
  })

  it.each([
    [["serve"], { SERVICE_PORT: "abc" }, "SERVICE_PORT"],
    [["migrate"], { SERVICE_DATABASE_URL: "postgres://127.0.0.1:1/x", SERVICE_SECRET_KEY: "short" }, "SERVICE_SECRET_KEY"],
    [["serve"], { SERVICE_DATABASE_URL: "postgres://127.0.0.1:1/x" }, "SERVICE_SECRET_KEY"],
    [["serve"], { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "-3" }, "SERVICE_RATE_LIMIT_DAILY_EXECUTIONS"],
    // Outside audit: a TTL past what a date can hold started, then every upload and file list was a 500.
    [["serve"], { SERVICE_FILE_TTL_MS: "9007199254740991" }, "SERVICE_FILE_TTL_MS"],
    // Outside audit: a base URL or an allowed origin with user info was taken, and the base URL's
    // credentials went into every ingest URL handed out.
    [["serve"], { SERVICE_BASE_URL: "http://u:BASEPASS@x.example" }, "SERVICE_BASE_URL: must not contain user info"],
    [["serve"], { SERVICE_MCP_ALLOWED_ORIGINS: "http://user:PASS@x.example" }, "SERVICE_MCP_ALLOWED_ORIGINS"],
    // A key pasted into the wrong variable is quoted by its prefix only.
    [["serve"], { SERVICE_LOG_FORMAT: "sk_ABCDEFGHIJKLMNOPQRST" }, "SERVICE_LOG_FORMAT: expected \"json\" or \"pretty\", got \"sk_ABCD…[redacted]\""],
    [["keys", "list"], { SERVICE_DATABASE_URL: "mysql://x" }, "SERVICE_DATABASE_URL"],
    [["keys", "list"], {}, "SERVICE_DATABASE_URL"],
    // A listen address that names no host: SERVICE_HOST's fault, with or without a database.
    [["serve"], { SERVICE_HOST: "nohost.invalid", SERVICE_API_KEYS: "cli_test_key_000001=p1" }, "SERVICE_HOST: nohost.invalid"],
    [["serve"], { SERVICE_HOST: "999.1.1.1", SERVICE_API_KEYS: "cli_test_key_000001=p1" }, "SERVICE_HOST: 999.1.1.1"]
  ] as const)("%s with %o stops with one line naming %s", async (command, env, variable) => {
    const run = await cli(command, env)
    expect(run.code).not.toBe(0)
    expect(run.code).not.toBeNull()
    const lines = run.stderr.split("\n").filter((line) => line.trim() !== "")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(variable)
    expect(run.stdout).toBe("")
  })
})

describe.skipIf(!postgresAvailable)("command line on Postgres", () => {
  let url: string
  let env: Record<string, string>
  let service: ChildService | undefined

  beforeAll(async () => {
    url = await createTestDatabase("cli")
    env = { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }
  })

  afterAll(async () => {
    await service?.stop()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("migrate, then keys create, list and revoke; the key works against serve until revoked", async () => {
    const migrated = await cli(["migrate"], env)
    expect(migrated.code).toBe(0)
    expect(migrated.stdout).toContain("database is migrated")
    expect((await cli(["migrate"], env)).code).toBe(0)

    const created = await cli(["keys", "create", "--project", "p1", "--user", "u1"], env)
    expect(created.code).toBe(0)
    const key = /^key:\s+(sk_[A-Za-z0-9]{40})$/m.exec(created.stdout)?.[1]
    const keyId = /^key id:\s+(key_\S+)$/m.exec(created.stdout)?.[1]
    if (key === undefined || keyId === undefined) throw new Error("keys create printed no key and id")
    expect(created.stdout.split(key)).toHaveLength(2)
    expect(created.stdout).toContain("pinned to user u1")
    expect(created.stderr).not.toContain(key)

    const listed = await cli(["keys", "list"], env)
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(keyId)
    expect(listed.stdout).toContain(key.slice(0, 10))
    expect(listed.stdout).not.toContain(key)
    expect(listed.stdout).toMatch(/^KEY ID\s+PREFIX\s+PROJECT\s+PINNED USER\s+CREATED\s+STATE$/m)
    expect(listed.stdout).toMatch(/\bp1\b.*\bu1\b.*active/)
    expect((await cli(["keys", "list", "--project", "other"], env)).stdout.trim()).toBe("no keys")

    service = await startProcess(env, await freePort())
    const me = await service.fetch("/v1/me", { key })
    expect(me.status).toBe(200)
    expect(await me.json()).toEqual({ projectId: "p1", keyId, pinnedUserId: "u1" })

    const revoked = await cli(["keys", "revoke", keyId], env)
    expect(revoked.code).toBe(0)
    expect(revoked.stdout).toContain(`revoked ${keyId}`)
    // The service caches key lookups for 5 seconds.
    const deadline = Date.now() + 7_000
    let status = 200
    while (Date.now() < deadline) {
      status = (await service.fetch("/v1/me", { key })).status
      if (status === 401) break
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(status).toBe(401)
    expect((await cli(["keys", "list"], env)).stdout).toMatch(/revoked \d{4}-/)
    const again = await cli(["keys", "revoke", keyId], env)
    expect(again.code).toBe(1)
    expect(again.stdout).toBe("")
    expect(again.stderr.trim()).toBe(`error: no active key ${keyId}`)
    // Outside audit: an argument that is no key id (a key pasted by mistake) was printed back.
    const pasted = await cli(["keys", "revoke", "bootstrap_key_SECRETCANARY_0001"], env)
    expect(pasted.code).toBe(1)
    expect(pasted.stderr.trim()).toBe("error: no active key has that id (key ids start with key_, as keys list shows them)")
  })

  it("projections status and replay print every projection", async () => {
    // `projections status` only reads: the database must be migrated (as the test above left it).
    expect((await cli(["migrate"], env)).code).toBe(0)
    const status = await cli(["projections", "status"], env)
    expect(status.code).toBe(0)
    const replay = await cli(["projections", "replay"], env)
    expect(replay.code).toBe(0)
    if (allProjections.length === 0) {
      expect(status.stdout.trim()).toBe("no projections")
      expect(replay.stdout.trim()).toBe("no projections")
    } else {
      expect(status.stdout).toMatch(/^NAME\s+MODE\s+CHECKPOINT\s+LAG$/m)
      // Not a terminal: no progress frames, only each projection's final count.
      expect(replay.stderr).toBe("")
      for (const projection of allProjections) {
        expect(status.stdout).toMatch(new RegExp(`^${projection.name}\\s+${projection.mode}\\s+\\S+.*\\s\\d+$`, "m"))
        expect(replay.stdout).toMatch(new RegExp(`^${projection.name}: rebuilt from \\d+ events and swapped in$`, "m"))
      }
      const help = await cli(["projections", "replay", "--help"], env)
      for (const projection of allProjections) expect(help.stdout).toContain(projection.name)
    }
    const unknown = await cli(["projections", "replay", "no_such_projection"], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stdout).toBe("")
    expect(unknown.stderr).toMatch(/^error: projections replay: unknown projection no_such_projection; known: /)
  })

  // Outside audit: `keys list`, `projections status` and `events tail` migrated the database they
  // were pointed at, so a newer command line inspecting a database that older processes serve
  // changed its schema under them. Only `migrate` and `serve` (and the commands that write) do.
  it("the commands that only read refuse a database this version has not migrated, and change nothing", async () => {
    const fresh = await createTestDatabase("cli_ro")
    const settings = { ...env, SERVICE_DATABASE_URL: fresh }
    const tables = async () => Number((await runSql<{ n: bigint }>(fresh, "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'"))[0]!.n)
    try {
      for (const args of [["keys", "list"], ["projections", "status"], ["events", "tail", "--from-start"]]) {
        const run = await cli(args, settings)
        expect(run.code, args.join(" ")).toBe(1)
        expect(run.stdout).toBe("")
        expect(run.stderr.trim()).toMatch(/^error: the database is not migrated to this version of the service \(\d+ of \d+ migrations applied\); run `migrate` first$/)
      }
      expect(await tables()).toBe(0)
      expect((await cli(["migrate"], settings)).code).toBe(0)
      const migrated = await tables()
      expect((await cli(["keys", "list"], settings)).stdout.trim()).toBe("no keys")
      expect((await cli(["projections", "status"], settings)).code).toBe(0)
      // One migration short, as an older version left it: refused again, and nothing applied.
      await runSql(fresh, "DELETE FROM schema_migrations WHERE id = (SELECT max(id) FROM schema_migrations)")
      const behind = await cli(["projections", "status"], settings)
      expect(behind.code).toBe(1)
      expect(behind.stderr).toMatch(/not migrated to this version/)
      expect(await tables()).toBe(migrated)
      expect(migrated).toBeGreaterThan(10)
    } finally {
      await dropTestDatabase(fresh)
    }
  })

  // A typo in the name used to be told only after connecting (and not at all without a database).
  it("projections replay refuses an unknown name before it looks for the database", async () => {
    const unreachable = { SERVICE_DATABASE_URL: "postgres://postgres@127.0.0.1:1/x", SERVICE_SECRET_KEY: Buffer.alloc(32, 1).toString("base64") }
    for (const settings of [{}, unreachable]) {
      const run = await cli(["projections", "replay", "executoins"], settings)
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      expect(run.stderr.trimEnd()).toBe(`error: projections replay: unknown projection executoins; known: ${allProjections.map((p) => p.name).join(", ")}`)
    }
  })

  // Outside audit: a replay stopped by SIGTERM (a service manager's stop) exited 130, as for
  // Ctrl-C: the replay set that status itself, whatever the signal.
  it("projections replay stopped by SIGTERM mid-replay says where it stopped and exits 143", async () => {
    const fresh = await createTestDatabase("cli_replay_stop")
    const settings = { ...env, SERVICE_DATABASE_URL: fresh }
    try {
      expect((await cli(["migrate"], settings)).code).toBe(0)
      // Enough of a log that the replay is still reading it when the signal comes.
      await runSql(fresh, `INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data)
        SELECT 'bulk', g, 'evt_bulk_' || g, 'Counted', 1, '{"n":1}' FROM generate_series(1, 400000) g`)
      const child = startCli(["projections", "replay"], settings)
      // The replay has begun once its fresh tables exist.
      const deadline = Date.now() + 20_000
      while (Date.now() < deadline) {
        const filling = await runSql<{ n: bigint }>(fresh, "SELECT count(*) AS n FROM pg_tables WHERE tablename LIKE 'v\\_%\\_\\_r%'")
        if (Number(filling[0]!.n) > 0) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      child.process.kill("SIGTERM")
      const run = await child.finished
      expect(run.stderr).toMatch(/interrupted: \S+ keeps its tables as they were/)
      expect(run.code).toBe(143)
    } finally {
      await dropTestDatabase(fresh)
    }
  }, 60_000)

  /** Appends three events to a stream of its own; their recorded forms. */
  const appendThree = (streamId: string, streamType = "cli_test") =>
    Effect.runPromise(
      Effect.flatMap(EventStore, (store) =>
        store.append([
          {
            streamId,
            streamType,
            expectedVersion: 0,
            events: [1, 2, 3].map((n) => ({ eventId: `evt_${streamId}_${Date.now()}_${n}`, type: "Counted", schemaVersion: 1, data: { n } }))
          }
        ])).pipe(
          Effect.provide(layerPgEventStore.pipe(
            Layer.provide(Layer.succeed(Projections, [])),
            Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
          ))
        )
    )

  /**
   * Runs `events tail ...args` until it has printed `count` events of `streamId`, then stops it;
   * those events, and every event it printed (`all`).
   */
  const tail = async (args: ReadonlyArray<string>, streamId: string, count: number, whileRunning: () => Promise<unknown> = async () => undefined) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, "events", "tail", ...args], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    try {
      let started = false
      const lines = await new Promise<{ readonly wanted: ReadonlyArray<string>; readonly all: ReadonlyArray<string> }>((resolve, reject) => {
        let out = ""
        let err = ""
        const timer = setTimeout(() => reject(new Error(`no events printed in 20 s: ${out}${err}`)), 20_000)
        child.stderr.on("data", (chunk: Buffer) => {
          err += chunk.toString()
          // The follower has read its starting position: what is appended now comes after it.
          if (!started && err.includes("following after ")) {
            started = true
            whileRunning().catch(reject)
          }
        })
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString()
          const json = out.split("\n").filter((line) => line.includes(`"stream":"${streamId}"`))
          if (json.length >= count) {
            clearTimeout(timer)
            resolve({ wanted: json, all: out.split("\n").filter((line) => line.startsWith("{")) })
          }
        })
        child.once("exit", (code) => reject(new Error(`tail exited with ${code}: ${out}${err}`)))
      })
      const parse = (line: string) => JSON.parse(line) as Record<string, unknown>
      return Object.assign(lines.wanted.map(parse), { all: lines.all.map(parse) })
    } finally {
      child.kill("SIGTERM")
    }
  }

  it("events tail --from-start prints one JSON line per event", async () => {
    const appended = await appendThree("cli-tail-1")
    const events = await tail(["--from-start"], "cli-tail-1", 3)
    expect(events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    expect(events.map((e) => e.position)).toEqual(appended.map((e) => `${e.position.tx}:${e.position.seq}`))
    for (const [i, e] of events.entries()) {
      expect(e).toMatchObject({ stream: "cli-tail-1", version: i + 1, type: "Counted", schemaVersion: 1 })
      expect(Date.parse(String(e.at))).not.toBeNaN()
    }
  })

  // `events tail | head -2`: the reader goes away, and the tail ends quietly, as a Unix filter does.
  it("events tail ends quietly (exit 0, no stack) when its reader closes the pipe", async () => {
    await appendThree("cli-tail-pipe")
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, "events", "tail"], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let err = ""
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const deadline = Date.now() + 10_000
    while (!err.includes("following after ") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    // The reader goes away; the tail learns it at its next write, for the next event.
    child.stdout.destroy()
    await appendThree("cli-tail-pipe-2")
    const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve("still running"), 15_000))])
    if (code === "still running") child.kill("SIGKILL")
    expect(code).toBe(0)
    expect(err).not.toContain("EPIPE")
  })

  it("events tail without a flag follows from the newest event; --from starts after a position", async () => {
    const fromHead = await tail([], "cli-tail-2", 3, () => appendThree("cli-tail-2"))
    expect(fromHead.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    const appended = await appendThree("cli-tail-3")
    const first = appended[0]!.position
    const after = await tail(["--from", `${first.tx}:${first.seq}`], "cli-tail-3", 2)
    expect(after.map((e) => e.data)).toEqual([{ n: 2 }, { n: 3 }])
  })

  // Outside audit: a position past the newest event (a typo, an extra digit) printed nothing and
  // said nothing while events were appended; it now says where the log is.
  it("events tail --from past the newest event says so on stderr", async () => {
    await appendThree("cli-tail-future")
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, "events", "tail", "--from", "99999999999:1"], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let err = ""
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    const deadline = Date.now() + 10_000
    while (!err.includes("following after ") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    child.kill("SIGTERM")
    await new Promise((resolve) => child.once("exit", resolve))
    expect(err).toMatch(/following after 99999999999:1/)
    expect(err).toMatch(/past the newest event \(\d+:\d+\)/)
  })

  it("events tail --stream-type prints only the events of a known stream type", async () => {
    // Idempotency streams are read by their id only, so made-up ones disturb nothing here.
    await appendThree("cli-tail-other")
    await appendThree("cli-tail-typed", "idempotency")
    const typed = await tail(["--from-start", "--stream-type", "idempotency"], "cli-tail-typed", 3)
    expect(typed.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
    // The other stream, appended before, was skipped.
    expect(typed.all.map((e) => e.stream)).not.toContain("cli-tail-other")
    expect(typed.all.map((e) => e.stream)).toContain("cli-tail-typed")
  })
})
