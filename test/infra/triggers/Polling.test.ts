/**
 * `github.issue_opened` pollers against a local fake GitHub (decisions.md section 5), the service
 * in this process in memory: the request (since, sort, per_page, token), ETag and 304, pages,
 * pull requests and pre-baseline issues skipped, labels, back-off on 429 (Retry-After) and 5xx
 * (doubling), the cadence kept on 401, and deletion stopping the poller.
 */
import { Layer, Logger, type LogLevel, References } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { type FakeGithub, startFakeGithub } from "../../support/FakeGithub.ts"
import { type InProcessService, startService } from "../../support/Service.ts"
import { allHistory, createConnection, createTriggerEndpoint, type CreatedSubscription, history, subscribe } from "../../support/Triggers.ts"
import { eventually } from "../../support/WebhookReceiver.ts"

const URL_OK = "https://93.184.215.14/hooks"

interface Setup {
  readonly github: FakeGithub
  readonly service: InProcessService
  readonly subscription: CreatedSubscription
}

const started: Array<Setup> = []
afterEach(async () => {
  for (const { service, github } of started.splice(0)) {
    await service.close()
    await github.close()
  }
})

const setup = async (
  options: { readonly filters?: Record<string, unknown>; readonly token?: string; readonly before?: (github: FakeGithub) => void; readonly around?: Layer.Layer<never> } = {}
): Promise<Setup> => {
  const github = await startFakeGithub()
  options.before?.(github)
  const service = await startService({
    SERVICE_GITHUB_API_URL: github.url,
    SERVICE_TRIGGER_MIN_POLL_SECONDS: "1",
    SERVICE_RATE_LIMIT_REQUEST_BURST: "10000"
  }, options.around)
  const endpoint = await createTriggerEndpoint(service, URL_OK, { active: false })
  const connection = await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: options.token ?? "gh-token" } })
  const subscription = await subscribe(service, {
    trigger: "github.issue_opened",
    userId: "u1",
    connectionId: connection.connectionId,
    webhookEndpointIds: [endpoint.endpointId],
    filters: options.filters ?? { owner: "octo", repo: "hello" },
    pollIntervalSeconds: 1
  })
  const result = { github, service, subscription }
  started.push(result)
  return result
}

interface Logged {
  readonly level: LogLevel.LogLevel
  readonly message: string
  readonly fields: Record<string, unknown>
}

/** The service's log entries about trigger polls, as they are written. */
const pollLogs = (into: Array<Logged>) =>
  Layer.mergeAll(
    Logger.layer([Logger.make((options) => {
      const [message, fields] = (Array.isArray(options.message) ? options.message : [options.message]) as [unknown, Record<string, unknown> | undefined]
      if (typeof message === "string" && message.startsWith("trigger poll")) into.push({ level: options.logLevel, message, fields: fields ?? {} })
    })]),
    Layer.succeed(References.MinimumLogLevel, "Info")
  )

/** The value of `trigger_polls_total` for `outcome` in the service's /metrics. */
const polls = async (service: InProcessService, outcome: string): Promise<number> => {
  const text = await (await service.fetch("/metrics", { key: null })).text()
  const line = text.split("\n").find((row) => row.startsWith("trigger_polls_total{") && row.includes(`outcome="${outcome}"`) && row.includes(`trigger="github.issue_opened"`))
  return line === undefined ? 0 : Number(line.split(" ").at(-1))
}

const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((at, i) => at - times[i]!)

describe("github.issue_opened pollers", () => {
  it("ask with since, sort, per_page and the token; keep the ETag (304); read every page; skip pull requests and issues before the baseline", async () => {
    const { github, service, subscription } = await setup({
      before: (fake) => void fake.addIssue({ title: "before the subscription", createdAt: new Date(Date.now() - 60_000).toISOString() })
    })
    await eventually(() => (github.requests.length >= 2 ? true : undefined), 10_000, "two polls")
    const [first, second] = github.requests
    expect(first?.path).toBe("/repos/octo/hello/issues")
    expect(first?.query).toEqual({ state: "all", sort: "created", direction: "asc", since: `${String(subscription.createdAt).slice(0, 19)}.000Z`, per_page: "100" })
    expect(first?.headers.authorization).toBe("Bearer gh-token")
    expect(first?.headers["if-none-match"]).toBeUndefined()
    expect(second?.headers["if-none-match"]).toBeDefined()
    expect(second?.status).toBe(304)
    // The old issue, updated after the baseline, is still no new issue.
    github.touch({ ...github.addIssue({ title: "also old", createdAt: new Date(Date.now() - 120_000).toISOString() }) })
    const opened = Array.from({ length: 150 }, (_, i) => github.addIssue({ title: `new ${i}` }))
    // The 150 share a millisecond or a few: the pull request, later, is alone at the newest
    // updated_at, so the answer for it fits on a page and its ETag is kept.
    await new Promise((resolve) => setTimeout(resolve, 5))
    github.addIssue({ title: "a pull request", pullRequest: true })
    const rows = await eventually(async () => {
      const found = await allHistory(service, `?subscriptionId=${subscription.subscriptionId}`)
      return found.length >= 150 ? found : undefined
    }, 15_000, "150 issues")
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await allHistory(service, `?subscriptionId=${subscription.subscriptionId}`)).toHaveLength(150)
    expect(rows.every((row) => row.deliveryMode === "polling" && row.dedupStatus === "accepted" && row.trigger === "github.issue_opened")).toBe(true)
    expect(rows.map((row) => row.occurredAt).toSorted()).toEqual(opened.map((issue) => new Date(issue.created_at).toISOString()).toSorted())
    expect(github.requests.some((request) => request.query.page === "2")).toBe(true)
    // The 150 were updated within the minute each poll asks again (domain/triggers/Polling.ts):
    // two pages keep no ETag, so every poll reads them again, and records none of them twice
    // (above).
    expect(github.requests.at(-1)?.status).toBe(200)
    expect(github.requests.at(-1)?.query.since).toBe(new Date(Date.parse(String(subscription.createdAt).slice(0, 19) + "Z")).toISOString())
  }, 40_000)

  it("deliver an issue opened in the subscription's own second, as GitHub dates it (whole seconds)", async () => {
    const { github, service, subscription } = await setup()
    await eventually(() => (github.requests.length >= 1 ? true : undefined), 10_000, "a poll")
    const sameSecond = github.addIssue({ title: "same second", createdAt: `${String(subscription.createdAt).slice(0, 19)}Z` })
    const row = await eventually(async () => (await history(service, `?subscriptionId=${subscription.subscriptionId}`))[0], 10_000, "the issue")
    expect(row.occurredAt).toBe(new Date(sameSecond.created_at).toISOString())
  }, 30_000)

  it("deliver an issue GitHub lists late, dated before the newest one already seen (replication lag, a skewed clock)", async () => {
    // Outside audit: the cursor asked `since` the newest updated_at, so an issue that showed up
    // after a newer one had been seen (dated a few seconds before it) was never listed again:
    // the watermark's overlap allowed for it, the question did not.
    const { github, service, subscription } = await setup()
    // The late issue must still be dated after the subscription (the baseline).
    await new Promise((resolve) => setTimeout(resolve, 3_500))
    const newer = github.addIssue({ title: "seen first" })
    await eventually(async () => (await history(service, `?subscriptionId=${subscription.subscriptionId}`))[0], 10_000, "the first issue")
    const late = github.addIssue({ title: "listed late", createdAt: new Date(Date.parse(newer.created_at) - 3_000).toISOString() })
    const rows = await eventually(async () => {
      const found = await history(service, `?subscriptionId=${subscription.subscriptionId}`)
      return found.length >= 2 ? found : undefined
    }, 10_000, "the issue listed late")
    expect(rows.map((row) => row.occurredAt).toSorted()).toEqual([late, newer].map((issue) => new Date(issue.created_at).toISOString()))
    // Asked again with the overlap, nothing is recorded twice.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await history(service, `?subscriptionId=${subscription.subscriptionId}`)).toHaveLength(2)
  }, 30_000)

  it.each([100, 101])("keep delivering after %i issues share the newest updated_at (a bulk edit)", async (edited) => {
    // GitHub's since is inclusive: the first page then holds the same 100 issues at every poll,
    // answered 304 for its ETag, and new issues sort onto later pages the poller never read
    // again (outside audit: 168 polls, nothing delivered).
    // A full page with no next one (100) is as stuck as two pages (re-audit).
    const old = Array.from({ length: edited }, (_, i) => `old ${i}`)
    const { github, service, subscription } = await setup({
      before: (fake) => {
        for (const title of old) fake.addIssue({ title, createdAt: new Date(Date.now() - 60_000).toISOString() })
      }
    })
    await eventually(() => (github.requests.length >= 1 ? true : undefined), 10_000, "a poll")
    const first = github.addIssue({ title: "before the bulk edit" })
    await eventually(async () => (await history(service, `?subscriptionId=${subscription.subscriptionId}`))[0], 10_000, "the first issue")
    const bulk = new Date().toISOString()
    for (const issue of github.issues().filter((listed) => listed.title.startsWith("old "))) github.touch(issue, bulk)
    const asked = github.requests.length
    await eventually(() => (github.requests.length >= asked + 3 ? true : undefined), 10_000, "polls after the edit")
    const later = [github.addIssue({ title: "later 1" }), github.addIssue({ title: "later 2" })]
    const rows = await eventually(async () => {
      const found = await history(service, `?subscriptionId=${subscription.subscriptionId}`)
      return found.length >= 3 ? found : undefined
    }, 10_000, "the issues opened after the bulk edit")
    expect(rows.map((row) => row.occurredAt).toSorted()).toEqual([first, ...later].map((issue) => new Date(issue.created_at).toISOString()).toSorted())
  }, 40_000)

  it("deliver only issues carrying every filtered label", async () => {
    const { github, service, subscription } = await setup({ filters: { owner: "octo", repo: "hello", labels: ["bug", "p1"] } })
    await eventually(() => (github.requests.length >= 1 ? true : undefined), 10_000, "a poll")
    github.addIssue({ labels: ["bug"] })
    const wanted = github.addIssue({ labels: ["p1", "bug", "ui"] })
    github.addIssue({})
    const rows = await eventually(async () => {
      const found = await history(service, `?subscriptionId=${subscription.subscriptionId}`)
      return found.length >= 1 ? found : undefined
    }, 10_000, "the labelled issue")
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    expect(await history(service, `?subscriptionId=${subscription.subscriptionId}`)).toHaveLength(1)
    expect(rows[0]?.occurredAt).toBe(new Date(wanted.created_at).toISOString())
  }, 30_000)

  it("back off on 429 (Retry-After) and on 5xx (doubling), then return to the cadence", async () => {
    const { github } = await setup()
    await eventually(() => (github.requests.length >= 1 ? true : undefined), 10_000, "a poll")
    github.failNext([{ status: 503 }, { status: 500 }, { status: 429, headers: { "retry-after": "3" } }])
    await eventually(() => (github.requests.length >= 7 ? true : undefined), 30_000, "polls after the failures")
    const statuses = github.requests.map((request) => request.status)
    const firstFailure = statuses.indexOf(503)
    expect(statuses.slice(firstFailure, firstFailure + 4)).toEqual([503, 500, 429, 304])
    const times = github.requests.map((request) => request.at)
    const [afterFirst5xx, afterSecond5xx, afterRateLimit, back] = gaps(times.slice(firstFailure, firstFailure + 5))
    expect(afterFirst5xx).toBeGreaterThanOrEqual(1_900)
    expect(afterFirst5xx).toBeLessThan(3_500)
    expect(afterSecond5xx).toBeGreaterThanOrEqual(3_900)
    expect(afterRateLimit).toBeGreaterThanOrEqual(2_900)
    expect(afterRateLimit).toBeLessThan(3_900)
    expect(back).toBeLessThan(2_000)
  }, 45_000)

  it("keep the cadence when GitHub refuses the token (401), and the subscription stays active", async () => {
    const { github, service, subscription } = await setup({ token: "wrong-token" })
    await eventually(() => (github.requests.length >= 4 ? true : undefined), 10_000, "four polls")
    expect(github.requests.every((request) => request.status === 401)).toBe(true)
    for (const gap of gaps(github.requests.map((request) => request.at))) expect(gap).toBeLessThan(1_800)
    const got = (await (await service.fetch(`/v1/subscriptions/${subscription.subscriptionId}`)).json()) as { status: string }
    expect(got.status).toBe("active")
  }, 30_000)

  // An outside audit: a revoked token, a GitHub answering 5xx or garbage, left no log line and
  // no metric at any level; the subscription read active and silently delivered nothing.
  it("say when they fail: a warn line on the 1st, 2nd, 4th… failure in a row, polls by outcome in /metrics, info once they recover", async () => {
    const logged: Array<Logged> = []
    const { github, service, subscription } = await setup({ token: "wrong-token", around: pollLogs(logged) })
    await eventually(() => (github.requests.length >= 5 ? true : undefined), 15_000, "five polls")
    const refused = logged.filter((entry) => entry.message === "trigger poll failed" && entry.fields.error === "GitHub answered 401")
    expect(refused.length).toBeGreaterThanOrEqual(3)
    expect(refused.slice(0, 3).map((entry) => entry.fields.failedPolls)).toEqual([1, 2, 4])
    expect(refused[0]?.level).toBe("Warn")
    expect(refused[0]?.fields).toMatchObject({ subscriptionId: subscription.subscriptionId, trigger: "github.issue_opened" })
    expect(typeof refused[0]?.fields.nextPollAt).toBe("string")
    expect(JSON.stringify(logged)).not.toContain("wrong-token")
    const counted = await polls(service, "refused")
    const asked = github.requests.length
    await eventually(() => (github.requests.length >= asked + 2 ? true : undefined), 10_000, "two more polls")
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await polls(service, "refused")).toBeGreaterThanOrEqual(counted + 2)
  }, 30_000)

  it("say which answer made them back off, and that they recovered", async () => {
    const logged: Array<Logged> = []
    const { github, service, subscription } = await setup({ around: pollLogs(logged) })
    await eventually(() => (github.requests.length >= 1 ? true : undefined), 10_000, "a poll")
    github.failNext([{ status: 503 }])
    const recovered = await eventually(() => logged.find((entry) => entry.message === "trigger polls recovered"), 15_000, "the recovery line")
    expect(recovered.level).toBe("Info")
    expect(recovered.fields).toMatchObject({ subscriptionId: subscription.subscriptionId, failedPolls: 1 })
    const failed = logged.filter((entry) => entry.message === "trigger poll failed")
    expect(failed.map((entry) => entry.fields.error)).toEqual(["GitHub answered 503"])
    expect(await polls(service, "backoff")).toBeGreaterThanOrEqual(1)
    expect(await polls(service, "not_modified")).toBeGreaterThanOrEqual(1)
  }, 30_000)

  it("stop when the subscription is deleted", async () => {
    const { github, service, subscription } = await setup()
    await eventually(() => (github.requests.length >= 2 ? true : undefined), 10_000, "two polls")
    expect((await service.fetch(`/v1/subscriptions/${subscription.subscriptionId}`, { method: "DELETE" })).status).toBe(204)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const count = github.requests.length
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(github.requests.length).toBe(count)
  }, 30_000)
})
