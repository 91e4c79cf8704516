const pad = (n: number) => String(n).padStart(2, "0")

/**
 * The zone a moment is shown in: `UTC` when the browser's time is UTC then, else its offset from
 * UTC at that moment (`UTC+05:30`, `UTC-03:30`; summer time included).
 */
export const zoneOf = (date: Date): string => {
  const offset = -date.getTimezoneOffset()
  if (offset === 0) return "UTC"
  const minutes = Math.abs(offset)
  return `UTC${offset > 0 ? "+" : "-"}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`
}

/** A time from the API: the local rendering for people, with its zone; the ISO value for machines and titles. */
export const formatTime = (iso: string): string => {
  const date = new Date(iso)
  return Number.isNaN(date.getTime())
    ? iso
    : `${date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" })} ${zoneOf(date)}`
}

export const Time = ({ iso }: { readonly iso: string | undefined }) =>
  iso === undefined ? <span class="muted">—</span> : <time dateTime={iso} title={iso}>{formatTime(iso)}</time>
