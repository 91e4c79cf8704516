/**
 * The polling policy of `github.issue_opened` (decisions.md section 5), pure: which listed issues
 * are new, how the cursor moves, and when to poll next.
 *
 * The cursor's `since` is the newest `updated_at` seen, and the question asks from a minute
 * before it (`askedSince`): an issue GitHub lists late (replication lag, a skewed clock), dated
 * before one already seen, is still listed, and the cursor's memory and the dedup claim keep the
 * others from being recorded twice. GitHub's `since` is inclusive, so an unchanged repository
 * answers the same list again, the same ETag, hence 304: `since` moves only when something changed. Only the ETag of an answer shorter than a page is kept (the poller's
 * part): when a page of issues or more share the newest `updated_at` (a bulk edit), the first
 * page stays the same while new issues arrive on later ones, and a 304 for it would hide them.
 * Issues created before the subscription (the baseline) are never delivered, nor are issues
 * created well before the newest one already seen (an old issue that was merely updated). Within
 * that overlap the cursor remembers the issues it delivered: an edit, however late, lists one
 * again, and the dedup claim on the issue id lasts only a day.
 */
import { isoTime } from "../Time.ts"

/** The longest cadence a polling subscription may ask for, and the one it gets by default (seconds). */
export const MAX_POLL_SECONDS = 86_400
export const DEFAULT_POLL_SECONDS = 60

export interface PollCursor {
  /** ISO time sent as `since`. */
  readonly since: string
  /** The ETag of the first page answered for `since`. */
  readonly etag?: string | undefined
  /** The subscription's creation: issues created before it are not delivered. */
  readonly baseline: string
  /** The newest `created_at` among issues seen. */
  readonly watermark?: string | undefined
  /** The issues delivered that are still within the watermark's overlap, oldest first. */
  readonly opened?: ReadonlyArray<OpenedIssue> | undefined
}

export interface OpenedIssue {
  /** GitHub's issue id, the dedup key. */
  readonly id: number
  readonly createdAt: string
}

/** How far before the watermark an issue may have been created and still be new (replication lag). */
export const WATERMARK_OVERLAP_MS = 10 * 60 * 1000
/** The most delivered issues a cursor remembers: the newest are kept. */
export const MAX_OPENED = 1_000
/** The longest wait between polls when the provider keeps failing without saying how long. */
export const MAX_BACKOFF_MS = 15 * 60 * 1000
/** A provider's own wait is followed up to this long. */
export const MAX_PROVIDER_WAIT_MS = 60 * 60 * 1000

/** The start of the second `ms` falls in: GitHub dates issues in whole seconds. */
const wholeSecond = (ms: number): number => Math.floor(ms / 1000) * 1000

/**
 * The first question asks from the start of the subscription's second: GitHub leaves out an
 * issue dated `…:17Z` from `since=…:17.557Z`, though it was opened after a subscription made then.
 */
export const initialCursor = (subscriptionCreatedAt: string): PollCursor => ({
  since: isoTime(wholeSecond(Date.parse(subscriptionCreatedAt))),
  baseline: subscriptionCreatedAt
})

/** How far before `since` a poll asks: an issue listed this late is still delivered. */
export const SINCE_OVERLAP_MS = 60 * 1000

/**
 * The `since` a poll sends: a minute before the cursor's, never before the subscription's second
 * (nothing older can be new). The price: an answer that runs past a page, with no ETag kept, is
 * read whole again at every poll while a page of issues or more were updated within that minute.
 */
export const askedSince = (cursor: PollCursor): string =>
  isoTime(Math.max(Date.parse(cursor.since) - SINCE_OVERLAP_MS, wholeSecond(Date.parse(cursor.baseline))))

export interface ListedIssue {
  /** GitHub's issue id, when the item has one. */
  readonly id?: number | undefined
  readonly createdAt: string
  readonly updatedAt: string
}

const withinOverlap = (createdAt: string, watermark: string | undefined): boolean =>
  watermark === undefined || Date.parse(createdAt) >= Date.parse(watermark) - WATERMARK_OVERLAP_MS

/** Whether a listed issue (not a pull request) may be delivered under `cursor`. */
export const isNewIssue = (cursor: PollCursor, issue: ListedIssue): boolean => {
  const created = Date.parse(issue.createdAt)
  // An issue dated in the subscription's own second counts as after it: the two cannot be told apart.
  if (Number.isNaN(created) || created < wholeSecond(Date.parse(cursor.baseline))) return false
  if (!withinOverlap(issue.createdAt, cursor.watermark)) return false
  return issue.id === undefined || !(cursor.opened ?? []).some((opened) => opened.id === issue.id)
}

const later = (a: string | undefined, b: string): string => (a === undefined || Date.parse(b) > Date.parse(a) ? b : a)

/**
 * The issues to remember after `delivered`: those within the overlap of `watermark`, each once,
 * the newest `MAX_OPENED` of them, oldest first.
 */
const rememberOpened = (kept: ReadonlyArray<OpenedIssue>, delivered: ReadonlyArray<OpenedIssue>, watermark: string | undefined): ReadonlyArray<OpenedIssue> => {
  const byId = new Map<number, OpenedIssue>()
  for (const issue of [...kept, ...delivered]) {
    if (withinOverlap(issue.createdAt, watermark)) byId.set(issue.id, { id: issue.id, createdAt: issue.createdAt })
  }
  return [...byId.values()].toSorted((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt)).slice(-MAX_OPENED)
}

/**
 * The cursor after a poll that listed `issues` (pull requests included: they move `since` too)
 * with `etag` on its first page, of which it `delivered` some. Nothing listed keeps the cursor,
 * and its ETag.
 */
export const advanceCursor = (
  cursor: PollCursor,
  issues: ReadonlyArray<ListedIssue>,
  etag: string | undefined,
  delivered: ReadonlyArray<OpenedIssue> = []
): PollCursor => {
  if (issues.length === 0) return etag === undefined ? cursor : { ...cursor, etag }
  let since = cursor.since
  let watermark = cursor.watermark
  for (const issue of issues) {
    if (!Number.isNaN(Date.parse(issue.updatedAt))) since = later(since, issue.updatedAt)
    if (!Number.isNaN(Date.parse(issue.createdAt))) watermark = later(watermark, issue.createdAt)
  }
  // The ETag belongs to the question asked: a new `since` asks another one.
  const sameQuestion = since === cursor.since
  const opened = rememberOpened(cursor.opened ?? [], delivered, watermark)
  return {
    since,
    baseline: cursor.baseline,
    ...(watermark !== undefined ? { watermark } : {}),
    ...(sameQuestion && etag !== undefined ? { etag } : {}),
    ...(opened.length > 0 ? { opened } : {})
  }
}

export type PollOutcome =
  | { readonly kind: "listed" }
  | { readonly kind: "not_modified" }
  /** 401, or a 403 that is no rate limit: the subscription stays active, polled at its cadence. */
  | { readonly kind: "refused" }
  /**
   * 429, a rate-limiting 403, 5xx or a transport failure; `waitMs` when the provider said how
   * long, `minimumMs` for the first wait when it did not but asks for at least that (GitHub's
   * secondary rate limit: a minute).
   */
  | { readonly kind: "backoff"; readonly waitMs?: number | undefined; readonly minimumMs?: number | undefined }

/**
 * Milliseconds until the next poll, and the count of consecutive back-offs after this one: the
 * cadence, or the provider's wait (Retry-After, X-RateLimit-Reset), or else a doubling from twice
 * the cadence (or from the outcome's minimum, if longer) up to 15 minutes. A back-off is never
 * sooner than the cadence: a wait of 0 or a reset already past (a stale header, a skewed clock)
 * must not turn a refusal into faster polling.
 */
export const nextPoll = (outcome: PollOutcome, intervalMs: number, failures: number): { readonly delayMs: number; readonly failures: number } => {
  if (outcome.kind !== "backoff") return { delayMs: intervalMs, failures: 0 }
  const count = failures + 1
  const doubling = 2 ** Math.min(count - 1, 20)
  const wait = outcome.waitMs !== undefined
    ? Math.min(MAX_PROVIDER_WAIT_MS, outcome.waitMs)
    : Math.min(MAX_BACKOFF_MS, Math.max(intervalMs * 2, outcome.minimumMs ?? 0) * doubling)
  return { delayMs: Math.max(intervalMs, wait), failures: count }
}

/** The `rel="next"` URL of a Link header (RFC 8288), if any. */
export const nextLink = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(",")) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part)
    if (match !== null && /(?:^|;)\s*rel\s*=\s*"?(?:[^";]*\s)?next(?:\s[^";]*)?"?\s*(?:;|$)/i.test(match[2]!)) return match[1]
  }
  return undefined
}
