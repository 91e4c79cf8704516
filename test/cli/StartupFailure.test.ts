/**
 * The one line of a failed start for database failures the start does not name one by one: it
 * names SERVICE_DATABASE_URL and says what Postgres (or the connection) said, not only the
 * client's outermost "PgConnection: Query failed".
 */
import { Cause } from "effect"
import { describe, expect, it } from "vitest"
import { StoreUnavailable } from "../../infra/eventlog/EventStore.ts"
import { unavailableNote } from "../../src/cli/Events.ts"
import { describeStartupFailure } from "../../src/cli/StartupFailure.ts"

const HOST = "127.0.0.1:5432/app"

/** What @effect/sql-pg fails with: an SqlError whose reason carries the driver's cause. */
const sqlError = (message: string, cause: Error) => ({ _tag: "SqlError", message, reason: { _tag: "UnknownError", message, cause } })

describe("describeStartupFailure", () => {
  it("a statement Postgres refused: its message and SQLSTATE, under SERVICE_DATABASE_URL", () => {
    const refused = Object.assign(new Error("permission denied for schema public"), { code: "42501" })
    const line = describeStartupFailure(Cause.fail(sqlError("PgConnection: Query failed", refused)), HOST)
    expect(line).toBe("SERVICE_DATABASE_URL: the database at 127.0.0.1:5432/app refused a statement: permission denied for schema public (SQLSTATE 42501)")
  })

  it("a connection that failed otherwise: what the client said, under SERVICE_DATABASE_URL", () => {
    const line = describeStartupFailure(Cause.fail(sqlError("PgConnection: Failed to parse server messages", new Error("Unexpected message type 72"))), HOST)
    expect(line).toBe("SERVICE_DATABASE_URL: the database at 127.0.0.1:5432/app failed: Failed to parse server messages (Unexpected message type 72)")
    const timedOut = describeStartupFailure(Cause.fail(sqlError("PgConnection: Connection timed out", new Error("Connection timed out"))), HOST)
    expect(timedOut).toBe("SERVICE_DATABASE_URL: the database at 127.0.0.1:5432/app failed: Connection timed out")
  })

  it("keeps the named cases as they were", () => {
    const missing = Object.assign(new Error("database \"app\" does not exist"), { code: "3D000" })
    expect(describeStartupFailure(Cause.fail(sqlError("PgConnection: Query failed", missing)), HOST))
      .toBe("SERVICE_DATABASE_URL: the database does not exist at 127.0.0.1:5432/app: database \"app\" does not exist")
  })
})

describe("events tail while the store is away", () => {
  // It printed "the store is unavailable ()": the store's error has no message of its own.
  it("says why, from the error's causes", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })
    const line = unavailableNote(new StoreUnavailable({ cause: sqlError("PgConnection: Failed to connect", refused) }), HOST, { tx: 1198n, seq: 464n })
    expect(line).toBe(
      "the store is unavailable (SERVICE_DATABASE_URL: the database at 127.0.0.1:5432/app is unreachable (connection refused)); following again after 1198:464 once it answers"
    )
  })
})
