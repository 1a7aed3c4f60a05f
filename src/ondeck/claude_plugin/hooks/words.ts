// What the mod sends and shows, as plain functions (no `$`): the records' payloads in the
// shape Claude Code's settings hooks receive, so ondeck makes the same records from either
// (classification, scrubbing and the fingerprint that makes a resend harmless), and the
// status line's words.

export type Verb = 'session-start' | 'stop' | 'post-compact' | 'session-end'

// One event as ondeck's `POST /api/v1/sessions/hook-events` takes it (and `ondeck hook
// <verb>` on its standard input, `payload` alone). `transcript_size` is -1 and no
// `transcript_path` is sent: the fingerprint then depends on the payload alone, so an
// event resent (by the mod, or handed to `ondeck hook`) is the same event, while two
// events of one session differ by `event_at`, the instant the mod heard it (a resumed
// session ends again with the same reason; two turns end with the same words).
export type HookEvent = {
  hook: Verb
  payload: Record<string, string>
  at: string
  transcript_size: -1
  context?: true
}

const HOOK_NAMES: Record<Verb, string> = {
  'session-start': 'SessionStart',
  stop: 'Stop',
  'post-compact': 'PostCompact',
  'session-end': 'SessionEnd',
}

export function hookEvent(
  hook: Verb,
  session: string,
  cwd: string,
  at: number,
  fields: Record<string, string>,
): HookEvent {
  const when = new Date(at).toISOString()
  const payload = {
    session_id: session,
    cwd,
    hook_event_name: HOOK_NAMES[hook],
    event_at: when,
    ...fields,
  }
  const event: HookEvent = { hook, payload, at: when, transcript_size: -1 }
  return hook === 'session-start' ? { ...event, context: true } : event
}

// The brief `ondeck hook session-start` printed (Claude Code's hook JSON), or ''.
export function briefOfHookOutput(stdout: string): string {
  try {
    const out = JSON.parse(stdout) as { hookSpecificOutput?: { additionalContext?: unknown } }
    const text = out.hookSpecificOutput?.additionalContext
    return typeof text === 'string' ? text : ''
  } catch {
    return ''
  }
}

// What a client-mode hook the mod ran adds for it (`"ondeck"` in its JSON): the status
// line it asked the server for, whether the server answered, the start's facts, and the
// brief after a compaction (`post-compact`) or for `/ondeck` (`ondeck hook brief`).
export type ModAnswer = {
  line?: string
  reachable: boolean
  store?: string // local mode: the id of the hooks' database
  facts?: { project?: string; side?: string; unclassified?: boolean }
  brief?: string
}

export function modAnswerOfHookOutput(stdout: string): ModAnswer | undefined {
  try {
    const told = (JSON.parse(stdout) as { ondeck?: Record<string, unknown> }).ondeck
    if (typeof told !== 'object' || told === null) return undefined
    const answer: ModAnswer = { reachable: told.reachable !== false }
    if (typeof told.line === 'string') answer.line = told.line
    if (typeof told.store === 'string' && /^[0-9a-f]{1,64}$/.test(told.store)) {
      answer.store = told.store
    }
    if (typeof told.brief === 'string' && told.brief) answer.brief = told.brief
    const f = told.facts as Record<string, unknown> | undefined
    if (typeof f === 'object' && f !== null) {
      answer.facts = {
        project: typeof f.project === 'string' ? f.project : undefined,
        side: typeof f.side === 'string' ? f.side : undefined,
        unclassified: f.unclassified === true,
      }
    }
    return answer
  } catch {
    return undefined
  }
}

// The status line: the server's own line, then what the mod knows that the server cannot
// (it is away; events went to `ondeck hook`, which stores or spools them, or wait here).
export function statusText(
  line: string,
  reachable: boolean,
  handed: number,
  kept: number,
  elsewhere = false,
): string {
  const parts = [line || 'ondeck']
  if (elsewhere) parts.push('⚠ the server serves another database than the hooks')
  else if (!reachable) parts.push('⚠ server unreachable')
  if (handed > 0) parts.push(`${handed} event${handed === 1 ? '' : 's'} handed to \`ondeck hook\``)
  if (kept > 0) parts.push(`${kept} event${kept === 1 ? '' : 's'} kept to resend`)
  return parts.join(' · ')
}

// The query of `GET /api/v1/context…` for this session.
export function contextQuery(
  facts: { project?: string; side?: string; unclassified?: boolean; session?: string },
  extra: Record<string, string>,
): string {
  const pairs: [string, string][] = Object.entries(extra)
  if (facts.project) pairs.push(['project', facts.project])
  if (facts.side) pairs.push(['side', facts.side])
  if (facts.unclassified) pairs.push(['unclassified', 'true'])
  if (facts.session) pairs.push(['session', facts.session])
  return pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
}
