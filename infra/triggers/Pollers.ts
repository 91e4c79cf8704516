/**
 * Polling subscriptions (`github.issue_opened`, decisions.md section 5), each an actor that runs
 * in exactly one process: the one whose runner incarnation holds the keyed lease
 * `trigger-poller/<subscriptionId>` (infra/actors/Leases.ts). A supervisor per incarnation lists
 * the polling subscriptions every few seconds (at once when one is created or deleted here),
 * takes the leases it can and runs a poller for each in the incarnation's actor scope: a lost
 * runner lease stops them all before a peer may take them over, and a peer takes a dead
 * process's pollers once its lease has lapsed.
 *
 * A poller waits until the subscription's next poll time (PollCursors.ts: the cadence holds
 * across restarts and take-overs), asks GitHub for the issues updated since its cursor (every
 * page, from an overlap before it: domain/triggers/Polling.ts), admits each new one (Admission.ts:
 * the issue id is the dedup key, so an overlap or a poll repeated after a crash records nothing
 * twice), then saves the cursor and the next time.
 */
import { Clock, Duration, Effect, FiberMap, Layer, Option, Redacted, Schema } from "effect"
import { IssueFilters, issueOpened, matchesIssueFilters, normalizeIssue } from "../../domain/catalog/Github.ts"
import { advanceCursor, askedSince, initialCursor, isNewIssue, type ListedIssue, nextPoll, type PollCursor, type PollOutcome } from "../../domain/triggers/Polling.ts"
import type { Subscription } from "../../domain/triggers/Subscription.ts"
import { type Incarnation, Leases, Runner, supervise } from "../actors/index.ts"
import { Connections } from "../connections/Connections.ts"
import { Wakeup } from "../eventlog/MemoryEventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import { fetchIssuesPage, firstPageUrl, type IssuesAnswer, ISSUES_PER_PAGE, listedTimes } from "../providers/GithubIssues.ts"
import { Admission } from "./Admission.ts"
import { PollCursors, type PollState } from "./PollCursors.ts"
import { Subscriptions } from "./Subscriptions.ts"
import { subscriptionFromRow, SUBSCRIPTIONS_TABLE } from "./TriggerProjections.ts"
import { triggerSettings } from "./TriggerSettings.ts"
import { recordPoll } from "../observability/Metrics.ts"

export const leaseKey = (subscriptionId: string) => `trigger-poller/${subscriptionId}`

const SCAN_MS = 2_000
const SCAN_PAGE = 500
/** Pages per poll at most (10,000 issues updated within one interval). */
const MAX_PAGES = 100
const REQUEST_TIMEOUT_MS = 25_000

const decodeIssueFilters = Schema.decodeUnknownOption(IssueFilters)

/**
 * A failing poller says so (a revoked token otherwise looks like a repository where nothing
 * happens): at warn on its first failure, on a change of what fails, and then at the 2nd, 4th,
 * 8th… failure in a row, so a subscription failing for days writes a few lines, not one a
 * poll; at info when a poll succeeds again.
 */
const reportPoll = (failing: { streak: number; problem: string | undefined }, subscription: Subscription, problem: string | undefined, nextPollAt: number) => {
  if (problem === undefined) {
    const after = failing.streak
    failing.streak = 0
    failing.problem = undefined
    return after === 0 ? Effect.void : Effect.logInfo("trigger polls recovered", { subscriptionId: subscription.subscriptionId, trigger: subscription.trigger, failedPolls: after })
  }
  failing.streak++
  const changed = problem !== failing.problem
  failing.problem = problem
  if (!changed && (failing.streak & (failing.streak - 1)) !== 0) return Effect.void
  return Effect.logWarning("trigger poll failed", {
    subscriptionId: subscription.subscriptionId,
    trigger: subscription.trigger,
    error: problem,
    failedPolls: failing.streak,
    nextPollAt: new Date(nextPollAt).toISOString()
  })
}

export const make = Effect.gen(function*() {
  const runner = yield* Runner
  const leases = yield* Leases
  const views = yield* ViewStore
  const subscriptions = yield* Subscriptions
  const cursors = yield* PollCursors
  const admission = yield* Admission
  const connections = yield* Connections
  const http = yield* OutboundHttp
  const settings = yield* Effect.orDie(triggerSettings)
  const changes = new Wakeup("1 hour")
  subscriptions.onChange(() => changes.notify())

  /** The connection's token; undefined when the connection is gone, expired or lacks it. */
  const tokenOf = (subscription: Subscription) =>
    connections.resolve({
      projectId: subscription.projectId,
      userId: subscription.userId,
      toolkit: issueOpened.toolkit,
      connectionId: subscription.connectionId,
      scopes: issueOpened.scopes
    }).pipe(
      Effect.map((resolved) => {
        const values = resolved.credentials === undefined ? undefined : Redacted.value(resolved.credentials)
        return values?.token ?? values?.apiKey
      }),
      Effect.orElseSucceed(() => undefined)
    )

  /** One poll: every page, each new issue admitted; the outcome and the cursor after it. */
  const pollOnce = Effect.fnUntraced(function*(incarnation: Incarnation, subscription: Subscription, cursor: PollCursor) {
    const filters = Option.getOrUndefined(decodeIssueFilters(subscription.filters))
    const token = yield* tokenOf(subscription)
    // No usable connection (deleted, expired) or filters: like a 401, the cadence holds.
    if (filters === undefined) return { outcome: { kind: "refused" } as PollOutcome, cursor, problem: "its filters cannot be read" }
    if (token === undefined) return { outcome: { kind: "refused" } as PollOutcome, cursor, problem: "its connection is gone, expired or holds no token" }
    const listed: Array<ListedIssue> = []
    const fresh: Array<NonNullable<ReturnType<typeof normalizeIssue>>> = []
    let url: string | undefined = firstPageUrl(settings.githubApiUrl, { owner: filters.owner, repo: filters.repo, since: askedSince(cursor) })
    let firstEtag: string | undefined
    for (let page = 0; url !== undefined && page < MAX_PAGES; page++) {
      const timeoutMs = Math.max(1, Math.min(REQUEST_TIMEOUT_MS, Math.floor(incarnation.safeUntil() - performance.now())))
      const answer: IssuesAnswer = yield* fetchIssuesPage(http, {
        apiUrl: settings.githubApiUrl,
        token,
        url,
        etag: page === 0 ? cursor.etag : undefined,
        timeoutMs,
        nowMs: yield* Clock.currentTimeMillis
      })
      if (answer.kind !== "listed") {
        // A later page failing leaves the cursor where it was: the next poll asks again.
        return answer.kind === "refused"
          ? { outcome: { kind: "refused" } as PollOutcome, cursor, problem: `GitHub answered ${answer.status}` }
          : { outcome: answer as PollOutcome, cursor, problem: answer.kind === "backoff" ? answer.reason : undefined }
      }
      // A first page that is or may not be the whole answer (a next page, or a full page whose
      // next one may come) can stay the same while later pages change: its ETag would make the
      // next poll a 304 that hides them (domain/triggers/Polling.ts).
      if (page === 0 && answer.next === undefined && answer.items.length < ISSUES_PER_PAGE) firstEtag = answer.etag
      for (const item of answer.items) {
        const times = Option.getOrUndefined(listedTimes(item))
        if (times === undefined) continue
        const payload = normalizeIssue(filters.owner, filters.repo, item)
        const issue = { id: payload?.id, createdAt: times.created_at, updatedAt: times.updated_at }
        listed.push(issue)
        if (payload !== undefined && isNewIssue(cursor, issue) && matchesIssueFilters(payload, filters)) {
          fresh.push(payload)
        }
      }
      url = answer.next
    }
    for (const issue of fresh) {
      const payload = { ...issue, labels: [...issue.labels] }
      yield* admission.admit({ subscription, dedupKey: `issue:${issue.id}`, occurredAtMs: Date.parse(issue.createdAt), payload }, "skip")
    }
    const delivered = fresh.map((issue) => ({ id: issue.id, createdAt: issue.createdAt }))
    return { outcome: { kind: "listed" } as PollOutcome, cursor: advanceCursor(cursor, listed, firstEtag, delivered), problem: undefined }
  })

  /** The poller of one subscription, for as long as this incarnation holds its lease. */
  const poller = Effect.fnUntraced(function*(incarnation: Incarnation, subscriptionId: string) {
    const failing = { streak: 0, problem: undefined as string | undefined }
    while (true) {
      const held = yield* leases.tryAcquire(incarnation, leaseKey(subscriptionId)).pipe(Effect.orElseSucceed(() => false))
      if (!held) return
      const subscription = yield* subscriptions.find(subscriptionId)
      if (subscription === undefined || subscription.deliveryMode !== "polling") {
        yield* Effect.ignore(leases.release(incarnation, leaseKey(subscriptionId)))
        return
      }
      const now = yield* Clock.currentTimeMillis
      const state: PollState = (yield* cursors.load(subscriptionId)) ?? { cursor: initialCursor(subscription.createdAt), nextPollAt: now, failures: 0 }
      if (state.nextPollAt > now) {
        yield* Effect.sleep(Duration.millis(state.nextPollAt - now))
        continue
      }
      const { outcome, cursor, problem } = yield* pollOnce(incarnation, subscription, state.cursor)
      const intervalMs = (subscription.pollIntervalSeconds ?? 60) * 1000
      const next = nextPoll(outcome, intervalMs, state.failures)
      // Deleted while polling: its cursor is gone and stays gone.
      if ((yield* subscriptions.find(subscriptionId)) === undefined) return
      const nextPollAt = (yield* Clock.currentTimeMillis) + next.delayMs
      yield* cursors.save(subscriptionId, { cursor, nextPollAt, failures: next.failures })
      recordPoll(subscription.trigger, outcome.kind)
      yield* reportPoll(failing, subscription, problem, nextPollAt)
    }
  }, (effect) => effect.pipe(Effect.catchCause((cause) => Effect.logWarning("trigger poller failed; the supervisor restarts it", cause))))

  /** Every polling subscription id, in pages. */
  const pollingIds = Effect.gen(function*() {
    const ids: Array<string> = []
    let after: string | undefined
    while (true) {
      const rows = yield* views.list(SUBSCRIPTIONS_TABLE, {
        where: [{ column: "delivery_mode", op: "=", value: "polling" }],
        orderBy: [{ column: "subscription_id", direction: "asc" }],
        after: after === undefined ? undefined : [after],
        limit: SCAN_PAGE
      })
      for (const row of rows) ids.push(subscriptionFromRow(row).subscriptionId)
      if (rows.length < SCAN_PAGE) return ids
      after = ids[ids.length - 1]
    }
  })

  /** One incarnation's supervisor: starts pollers for the leases it can take, stops those of deleted subscriptions. */
  const supervisor = (incarnation: Incarnation) =>
    Effect.scoped(Effect.gen(function*() {
      const fibers = yield* FiberMap.make<string, void, never>()
      while (true) {
        const since = changes.generation()
        const ids = yield* pollingIds.pipe(Effect.orElseSucceed(() => undefined))
        if (ids !== undefined) {
          const live = new Set(ids)
          const gone = [...fibers].map(([id]) => id).filter((id) => !live.has(id))
          for (const id of gone) {
            yield* FiberMap.remove(fibers, id)
            yield* Effect.ignore(leases.release(incarnation, leaseKey(id)))
          }
          const idle = ids.filter((id) => !FiberMap.hasUnsafe(fibers, id))
          const granted = yield* Effect.forEach(idle, (id) => leases.tryAcquire(incarnation, leaseKey(id)).pipe(Effect.orElseSucceed(() => false)), {
            concurrency: "unbounded"
          })
          for (const [i, id] of idle.entries()) if (granted[i]) yield* FiberMap.run(fibers, id, poller(incarnation, id))
        }
        yield* changes.wait(since).pipe(Effect.timeoutOption(SCAN_MS))
      }
    }))

  yield* Effect.forkScoped(supervise(runner, supervisor))
})

export const layer = Layer.effectDiscard(make)
