/**
 * Loading what a view shows, with the states it renders: loading, loaded, failed. A list pages
 * by cursor (a stack of the cursors followed, so Previous works without an API "previous"), and
 * anything still moving (pending, delivering, running) is loaded again every POLL_MS until it
 * settles. Answers that arrive after a newer request started are dropped.
 */
import { createContext } from "preact"
import { useCallback, useContext, useEffect, useRef, useState } from "preact/hooks"
import { type Problem, toProblem } from "./api.ts"

export const POLL_MS = 2_000
export const PAGE_SIZE = 20

export interface Page<T> {
  readonly items: ReadonlyArray<T>
  readonly nextCursor?: string | undefined
}

export interface Loaded<T> {
  readonly value: T | undefined
  readonly problem: Problem | undefined
  /** True while a request is in flight (polls included). */
  readonly busy: boolean
  readonly reload: () => void
}

/** Loads `load()` when `key` changes, and again every POLL_MS while `moving(value)` holds. */
export const useResource = <T,>(key: string, load: () => Promise<T>, moving: (value: T) => boolean = () => false): Loaded<T> => {
  const [state, setState] = useState<{ readonly key: string; readonly value: T | undefined; readonly problem: Problem | undefined }>({
    key,
    value: undefined,
    problem: undefined
  })
  const [busy, setBusy] = useState(true)
  const sequence = useRef(0)
  const loadRef = useRef(load)
  loadRef.current = load

  const reload = useCallback(() => {
    const mine = ++sequence.current
    setBusy(true)
    loadRef.current().then(
      (value) => {
        if (mine !== sequence.current) return
        setState({ key, value, problem: undefined })
        setBusy(false)
      },
      (error: unknown) => {
        if (mine !== sequence.current) return
        // A failed poll keeps what was shown, with the error above it.
        setState((previous) => ({ key, value: previous.key === key ? previous.value : undefined, problem: toProblem(error) }))
        setBusy(false)
      }
    )
  }, [key])

  useEffect(() => {
    reload()
    return () => {
      // Unmounted or re-keyed: late answers are dropped.
      sequence.current++
    }
  }, [reload])

  const value = state.key === key ? state.value : undefined
  const problem = state.key === key ? state.problem : undefined
  // A failed poll of something still moving is tried again when the failure may pass (a 429, a
  // 503, the network): later, after the service's Retry-After when it gave one.
  const shouldPoll = value !== undefined && moving(value) && (problem === undefined || problem.retryable)
  const delay = problem === undefined ? POLL_MS : Math.max(2 * POLL_MS, (problem.retryAfter ?? 0) * 1000)
  useEffect(() => {
    if (!shouldPoll) return
    const timer = setTimeout(reload, delay)
    return () => clearTimeout(timer)
  }, [shouldPoll, delay, state, reload])

  return { value, problem, busy, reload }
}

/**
 * The cursors a list has followed, kept in the history entry's state (never in the URL: a cursor
 * means nothing in a shared link), so a reload, and Back to the entry, show the same page. One
 * list per entry: each view pages one list.
 *
 * They are kept with the session's key they were followed with (`ListOwner`): a cursor belongs to
 * one list of one key, and after Sign out and a sign-in with another key (another project, a
 * pinned key) in the same tab, the entries Back returns to still hold the last session's, which
 * the service refuses (422). Those are not followed; a new session starts on the first page.
 */
const PAGES = "dashboard:pages"

/** Whose cursors a list keeps: the signed-in key (project and key id); provided by the shell. */
export const ListOwner = createContext("")

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> => typeof value === "object" && value !== null

const storedStack = (owner: string, key: string): ReadonlyArray<string | undefined> => {
  const state: unknown = window.history.state
  const kept = isRecord(state) ? state[PAGES] : undefined
  if (!isRecord(kept) || kept.owner !== owner || kept.key !== key || !Array.isArray(kept.cursors)) return [undefined]
  const cursors = kept.cursors as ReadonlyArray<unknown>
  return cursors.every((cursor) => typeof cursor === "string") ? [undefined, ...(cursors as ReadonlyArray<string>)] : [undefined]
}

const storeStack = (owner: string, key: string, stack: ReadonlyArray<string | undefined>): void => {
  const state: unknown = window.history.state
  const cursors = stack.slice(1)
  const kept = isRecord(state) ? state[PAGES] : undefined
  if (isRecord(kept) && kept.owner === owner && kept.key === key && JSON.stringify(kept.cursors) === JSON.stringify(cursors)) return
  window.history.replaceState({ ...(isRecord(state) ? state : {}), [PAGES]: { owner, key, cursors } }, "")
}

/**
 * Takes the cursors out of the entry shown (on Sign out): they name the project's records, and
 * the next session starts on the first page even with the same key. Other entries keep theirs,
 * which only the same key follows again.
 */
export const forgetPages = (): void => {
  const state: unknown = window.history.state
  if (!isRecord(state) || !(PAGES in state)) return
  const rest: Record<string, unknown> = { ...state }
  delete rest[PAGES]
  window.history.replaceState(rest, "")
}

export interface Paged<T> extends Loaded<Page<T>> {
  readonly page: number
  /**
   * True while `value` is the page shown before, kept while another page of the same list loads
   * (Next, Previous, First): dropping its rows would shorten the page and take the pager, and the
   * keyboard focus on it, off the screen (ui/ListState.tsx).
   */
  readonly stale: boolean
  readonly first: () => void
  readonly previous: () => void
  readonly next: () => void
}

/**
 * One list view's pages. `key` names the list and its filters: a new key starts from the first
 * page. `moving(item)` true for any item on the page keeps the page polling.
 */
export const usePaged = <T,>(
  key: string,
  load: (cursor: string | undefined) => Promise<Page<T>>,
  moving: (item: T) => boolean = () => false
): Paged<T> => {
  const owner = useContext(ListOwner)
  const [cursors, setCursors] = useState<{ readonly key: string; readonly stack: ReadonlyArray<string | undefined> }>(() => ({
    key,
    stack: storedStack(owner, key)
  }))
  // A new key (other filters, Back to another entry) starts where that entry left its list.
  const stack = cursors.key === key ? cursors.stack : storedStack(owner, key)
  useEffect(() => storeStack(owner, key, stack), [owner, key, stack.length, stack[stack.length - 1]])
  const cursor = stack[stack.length - 1]
  const loaded = useResource(`${key}\u0000${stack.length}\u0000${cursor ?? ""}`, () => load(cursor), (page) => page.items.some(moving))
  // The last page shown of this list (not of other filters: those start afresh, "Loading").
  const shown = useRef<{ readonly key: string; readonly value: Page<T> } | undefined>(undefined)
  if (loaded.value !== undefined) shown.current = { key, value: loaded.value }
  const kept = loaded.value === undefined && loaded.problem === undefined && shown.current?.key === key ? shown.current.value : undefined
  return {
    ...loaded,
    value: kept ?? loaded.value,
    stale: kept !== undefined,
    page: stack.length - 1,
    first: () => setCursors({ key, stack: [undefined] }),
    previous: () => setCursors({ key, stack: stack.length > 1 ? stack.slice(0, -1) : stack }),
    next: () => {
      const nextCursor = loaded.value?.nextCursor
      if (nextCursor !== undefined) setCursors({ key, stack: [...stack, nextCursor] })
    }
  }
}

/**
 * An action a view runs on a button press, with the problem it last met: cleared when the next
 * action starts, set when one fails.
 */
export const useAction = () => {
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const act = async (action: () => Promise<void>) => {
    setProblem(undefined)
    try {
      await action()
    } catch (error) {
      setProblem(toProblem(error))
    }
  }
  return { problem, act }
}
