/**
 * Said while the client library waits to send a refused GET once more (a 429, or a 503 that gave
 * a delay: client/README.md, Retries): otherwise a list shows nothing new, and Refresh stays busy,
 * for as long as the service asked to wait. The reason and the wait are announced once; the
 * seconds left count down beside them for the eye only, so a screen reader is not told every second.
 */
import { useEffect, useState } from "preact/hooks"
import { RETRY_WAIT, type RetryWaitDetail } from "../api.ts"

interface Waiting {
  readonly said: string
  readonly until: number
}

export const RetryWaitNotice = () => {
  const [waiting, setWaiting] = useState<Waiting | undefined>(undefined)
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const heard = (event: Event) => {
      const { status, seconds } = (event as CustomEvent<RetryWaitDetail>).detail
      const until = Date.now() + seconds * 1000
      setNow(Date.now())
      // Several lists waiting at once: the one that waits longest is said.
      setWaiting((current) =>
        current !== undefined && current.until > until ? current : {
          said: `${status === 429 ? "Rate limited" : "The service is unavailable for a moment"}; retrying in ${seconds} s.`,
          until
        }
      )
    }
    window.addEventListener(RETRY_WAIT, heard)
    return () => window.removeEventListener(RETRY_WAIT, heard)
  }, [])
  useEffect(() => {
    if (waiting === undefined) return
    const timer = setInterval(() => {
      const at = Date.now()
      setNow(at)
      if (at >= waiting.until) setWaiting(undefined)
    }, 1000)
    return () => clearInterval(timer)
  }, [waiting])
  const left = waiting === undefined ? 0 : Math.max(0, Math.ceil((waiting.until - now) / 1000))
  return (
    <p class={waiting === undefined ? "retry-wait" : "retry-wait notice"}>
      <span role="status" aria-live="polite">{waiting?.said ?? ""}</span>
      {waiting === undefined ? null : <span class="muted" aria-hidden="true"> ({left} s left)</span>}
    </p>
  )
}
