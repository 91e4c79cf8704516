/**
 * `/metrics` while Postgres is away (decisions.md section 9; operations.md, "Probes and
 * metrics"): a real service process on a Postgres of the test's own (test/support/OwnPostgres.ts),
 * reached through a TCP proxy (test/support/TcpProxy.ts). Postgres is first stopped (connections
 * refused), then, once it is back, silent (the proxy holds every byte, as a frozen server or a
 * dead link does). Either way a scrape answers 200 within a few seconds; every metric the
 * process keeps itself (requests, latencies, executions and deliveries by outcome) is still in
 * it; the gauges read from the store are absent or at their last value; and `store_up` says
 * whether the store answered for that scrape.
 */
import { afterAll, describe, expect, it } from "vitest"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { startTcpProxy, type TcpProxy } from "../support/TcpProxy.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, serviceEnv } from "../support/Webhooks.ts"

/** What a scrape answers within this is "quickly": the gauges' own wait and a margin. */
const QUICK_MS = 3_000

interface Scrape {
  readonly status: number
  readonly ms: number
  /** Each sample line's value by its series (`name{labels}`). */
  readonly samples: ReadonlyMap<string, number>
}

const parse = (text: string): ReadonlyMap<string, number> =>
  new Map(text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const at = line.lastIndexOf(" ")
    return [line.slice(0, at), Number(line.slice(at + 1))] as const
  }))

/** Metrics this process keeps itself: they must survive any outage of the store. */
const IN_PROCESS = /^(http_server_requests_total|http_server_request_duration_seconds_(bucket|sum|count)|executions_total|webhook_delivery_attempts_total|webhook_delivery_attempt_duration_seconds_(bucket|sum|count)|webhook_deliveries_total|eventlog_events_appended_total)\{?/

/** Gauges read from the store at each scrape. */
const FROM_STORE = /^(webhook_lane_depth|webhook_lane_oldest_pending_seconds|projection_lag_events|projection_lag_events_by_follower|db_connections)\{?/

describe.skipIf(!ownPostgresAvailable)("/metrics while Postgres is away (its own server, a real service process)", () => {
  let postgres: OwnPostgres | undefined
  let proxy: TcpProxy | undefined
  let receiver: Receiver | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    proxy?.resume()
    if (service !== undefined && service.process.exitCode === null) await service.kill9()
    await proxy?.close()
    await receiver?.close()
    await postgres?.destroy()
  })

  const scrape = async (): Promise<Scrape> => {
    const started = Date.now()
    const response = await service!.fetch("/metrics", { key: null, signal: AbortSignal.timeout(30_000) })
    const text = await response.text()
    return { status: response.status, ms: Date.now() - started, samples: parse(text) }
  }

  const storeUp = (taken: Scrape) => taken.samples.get("store_up")

  /** The scrape answered quickly, and every in-process series of `before` is in it, not lower. */
  const expectInProcessKept = (before: Scrape, during: Scrape, what: string) => {
    expect(during.status, what).toBe(200)
    expect(during.ms, what).toBeLessThan(QUICK_MS)
    const kept = [...before.samples].filter(([series]) => IN_PROCESS.test(series))
    expect(kept.length).toBeGreaterThan(10)
    for (const [series, value] of kept) {
      expect(during.samples.get(series), `${what}: ${series}`).toBeGreaterThanOrEqual(value)
    }
    expect(during.samples.get("nodejs_heap_used_bytes"), what).toBeGreaterThan(0)
  }

  /** Every gauge read from the store is absent, or at its value in `last` (the last read that answered). */
  const expectStoreGaugesAbsentOrKept = (last: Scrape, during: Scrape, what: string) => {
    for (const [series, value] of during.samples) {
      if (FROM_STORE.test(series)) expect(value, `${what}: ${series}`).toBe(last.samples.get(series))
    }
  }

  it("answers 200 quickly with every in-process metric, store gauges absent or as last read, and store_up 0 while Postgres is stopped or silent", async () => {
    postgres = await startOwnPostgres()
    proxy = await startTcpProxy(postgres.url)
    const certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    service = await startProcess(serviceEnv(proxy.url(postgres.url), certificate), await freePort())

    // Something of every in-process kind: requests, executions by outcome, deliveries.
    const endpoint = await createEndpoint(service, "p1", receiver.url("/hook"))
    const echo = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { a: 1 } } })
    expect(echo.status).toBe(200)
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.fail", userId: "u1", input: { code: "provider_error" } } })
    await eventually(async () => (await deliveriesOf(service!, "p1", endpoint.endpointId)).filter((d) => d.status === "succeeded").length === 2 || undefined, 20_000, "two deliveries")

    const up = await scrape()
    expect(up.status).toBe(200)
    expect(storeUp(up)).toBe(1)
    for (const gauge of ["webhook_lane_depth", "projection_lag_events", "db_connections{state=\"active\"}"]) expect(up.samples.has(gauge), gauge).toBe(true)
    expect(up.samples.get("executions_total{tool=\"demo.echo\",outcome=\"succeeded\"}")).toBe(1)
    expect(up.samples.get("webhook_deliveries_total{outcome=\"succeeded\"}")).toBe(2)

    // Stopped: connections are refused.
    await postgres.stop()
    for (let i = 0; i < 3; i++) {
      const down = await scrape()
      expectInProcessKept(up, down, `stopped, scrape ${i + 1}`)
      expectStoreGaugesAbsentOrKept(up, down, `stopped, scrape ${i + 1}`)
      expect(storeUp(down), `stopped, scrape ${i + 1}`).toBe(0)
    }

    await postgres.start()
    const back = await eventually(async () => {
      const again = await scrape()
      return storeUp(again) === 1 ? again : undefined
    }, 30_000, "store_up 1 once Postgres is back")
    expect(back.samples.has("projection_lag_events")).toBe(true)

    // Silent: connected, but no byte comes back.
    proxy.pause()
    try {
      for (let i = 0; i < 3; i++) {
        const silent = await scrape()
        expectInProcessKept(up, silent, `silent, scrape ${i + 1}`)
        expectStoreGaugesAbsentOrKept(back, silent, `silent, scrape ${i + 1}`)
        expect(storeUp(silent), `silent, scrape ${i + 1}`).toBe(0)
      }
    } finally {
      proxy.resume()
    }
    await eventually(async () => storeUp(await scrape()) === 1 || undefined, 30_000, "store_up 1 once Postgres answers again")
  }, 180_000)
})
