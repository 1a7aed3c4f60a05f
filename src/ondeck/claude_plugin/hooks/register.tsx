// ondeck inside Claude Code (a mod, Claude Code 2.1.287 and later).
//
// Each session event goes to this machine's ondeck server as the hooks send it today
// (`POST /api/v1/sessions/hook-events`), over the server's owner-only Unix socket: only
// the owner can open it (its directory is 0700), and the server admits its own user there
// by the kernel's word (SO_PEERCRED), with `ONDECK_TOKEN` set too: no token rides and no
// other user's listener on the TCP port hears a word. Nothing is sent before the socket is
// checked as the Python hooks check it (`socketChecked`): the mod cannot ask the kernel who
// owns a file, so `python -I -c` asks once, and again whenever the socket or its directory
// changed (a server restarted); no process runs per event. When the server does
// not answer, the event is handed to `python -I -m ondeck hook <verb>`, which stores it in the
// database or its spool (and in client mode, where there is no socket, it always is: the
// hook makes the record on this machine and sends it with the token, and tells the mod the
// status line, asked with that token: the mod never holds it). What even that cannot take
// is kept here and sent with the next event. The status line says which.
//
// The brief (`session-start`'s answer) reaches the model as a `prompt.context` block: at the
// first request, after a compaction (fetched again then) and after a `/clear` (a new
// session, recorded as one). In client mode the hook fetches it again: `post-compact`'s
// answer carries it, and `/ondeck` runs `ondeck hook brief`, which records nothing.

import type { EngineInterface, Register } from 'claude-code'
import { briefOfHookOutput, contextQuery, hookEvent, modAnswerOfHookOutput, statusText } from './words'
import type { HookEvent } from './words'

const BASE = 'http://127.0.0.1/api/v1'
// What the Python hooks check before they send (host/http_client.py): the directory
// the user's alone (0700) and no symlink, the socket a socket of the user and no symlink, a
// process of the user listening. It prints why not, or "ok".
const CHECK = [
  'import sys',
  'from ondeck.host.http_client import owner_socket_problem',
  'print(owner_socket_problem(sys.argv[1]) or "ok")',
].join('\n')
const CHECK_TIMEOUT_MS = 10000
const PANE = 'ondeck'
const BLOCK = 'ondeck'
// A hook's process may wait for a locked database (5 s) and read git (1 s).
const HOOK_TIMEOUT_MS = 20000
// `-I`: isolated, as every command line ondeck writes (host/launch.py): a bare `-m ondeck`
// would run an `ondeck/` or `ondeck.py` of the session's folder, and PYTHON* variables
// could choose the code too. The interpreter is the one `ondeck setup claude-code` gave.
const ISOLATED = '-I'

type Facts = { project?: string; side?: string; unclassified?: boolean; session?: string }
type Answer = Record<string, unknown>

type Dollar = EngineInterface

// This process's state: one session at a time (a `/clear` starts the next).
const my = {
  python: 'python3',
  socket: '',
  // The id of the database the hooks (and so this mod's hand-overs and spool) write to, as
  // the first hand-over's hook told it (learned from the database itself). Until it is
  // known the mod sends nothing to the server: a server serving another database would
  // file half of the session there. Sent with each event, the server refuses (409) when
  // it serves another one, and the mod hands the events over again.
  store: '',
  elsewhere: false, // the server said it serves another database
  session: '', // the session recorded as started in this process
  cwd: '',
  started: undefined as Promise<void> | undefined,
  brief: '',
  facts: {} as Facts,
  line: '',
  reachable: true,
  handed: 0,
  kept: [] as HookEvent[],
  checked: '', // how the socket and its directory looked when the check passed
  refused: '', // why the socket was last refused (said once in the debug log)
}

// Whether the socket may be sent to: the check (a process) passed for the socket and the
// directory as they are now. What the engine's stat shows (no process) is asked before
// every request: a symlink or a socket that is none is refused at once, and any change
// (the socket made again by a server that restarted, the directory replaced) checks again.
async function socketChecked($: Dollar): Promise<boolean> {
  const dir = my.socket.slice(0, my.socket.lastIndexOf('/')) || '/'
  let seen: string
  try {
    const [d, s] = [await $.fs.stat(dir), await $.fs.stat(my.socket)]
    if (d.isLink || d.kind !== 'dir') return refused($, `${dir} is a symlink or not a directory`)
    if (s.isLink || s.kind !== 'other') return refused($, `${my.socket} is a symlink or not a socket`)
    seen = `${d.mtimeMs} ${s.mtimeMs}`
  } catch {
    my.checked = ''
    return false // no socket: no server here (the hook stores the event), nothing to say
  }
  if (seen === my.checked) return true
  my.checked = ''
  let said: string
  try {
    const ran = await $.process.run([my.python, ISOLATED, '-c', CHECK, my.socket], {
      timeoutMs: CHECK_TIMEOUT_MS,
    })
    said = ran.exitCode === 0 ? ran.stdout.trim() : `the check failed: ${ran.stderr.trim().slice(-300)}`
  } catch (e) {
    said = `the check did not run: ${String(e)}`
  }
  if (said !== 'ok') return refused($, said)
  my.checked = seen
  my.refused = ''
  return true
}

async function refused($: Dollar, why: string): Promise<boolean> {
  if (why !== my.refused) {
    my.refused = why
    $.ui.log(`ondeck: nothing sent through ${my.socket}: ${why}`, { to: 'debug' })
  }
  return false
}


// How ondeck is started: the same line as host/launch.py's `ondeck_argv`.
function ondeck(): string[] {
  return [my.python, ISOLATED, '-m', 'ondeck']
}

async function ask($: Dollar, method: string, path: string, body?: unknown) {
  if (!my.socket || !my.store || my.elsewhere || !(await socketChecked($))) return undefined
  try {
    const headers = { 'content-type': 'application/json', 'x-ondeck-store-expected': my.store }
    const init = { method, headers, socketPath: my.socket }
    const sent = body === undefined ? init : { ...init, body: JSON.stringify(body) }
    const answer = await $.http.fetch(`${BASE}${path}`, sent)
    if (answer.status === 409) {
      // It serves another database than the hooks': it is asked nothing more until the
      // next session starts (events go to `ondeck hook`, its line would be another's).
      my.elsewhere = true
      my.line = ''
      return undefined
    }
    return answer.ok ? answer.text : undefined
  } catch {
    return undefined
  }
}

// The server's result for the event, or undefined when it did not take it.
async function viaServer($: Dollar, event: HookEvent): Promise<Answer | undefined> {
  // Not yet told which database is ours (the hook it is handed to tells), or the server
  // serves another: the event goes to `ondeck hook`.
  if (!my.store || my.elsewhere) return undefined
  const text = await ask($, 'POST', '/sessions/hook-events', { events: [event] })
  if (text === undefined) {
    if (my.socket && !my.elsewhere) my.reachable = false
    return undefined
  }
  try {
    const result = (JSON.parse(text) as { results: Answer[] }).results[0]
    if (result === undefined || result.outcome === 'declined' || result.outcome === 'rejected') {
      return undefined
    }
    my.reachable = true
    return result
  } catch {
    return undefined
  }
}

async function viaHook($: Dollar, event: HookEvent): Promise<string | undefined> {
  return runHook($, event.hook, JSON.stringify(event.payload))
}

// `ondeck hook <verb>`'s output, or undefined when it failed.
async function runHook($: Dollar, verb: string, stdin: string): Promise<string | undefined> {
  // The settings hooks stand down while ONDECK_MOD is "1" (the mod has the session); this
  // very hand-over is the mod's and must not. In client mode the hook, which holds the
  // token (the mod holds none), also asks for the status line (ONDECK_MOD_STATUS) and,
  // after a compaction or for `/ondeck`, the brief.
  const env: Record<string, string> = my.socket
    ? { ONDECK_MOD: '', ONDECK_MOD_STORE: '1' }
    : { ONDECK_MOD: '', ONDECK_MOD_STATUS: contextQuery(my.facts, {}) }
  try {
    const ran = await $.process.run([...ondeck(), 'hook', verb], {
      stdin,
      env,
      timeoutMs: HOOK_TIMEOUT_MS,
    })
    if (ran.exitCode !== 0) return undefined
    const told = modAnswerOfHookOutput(ran.stdout)
    if (told?.store !== undefined && my.socket) my.store = told.store
    if (told !== undefined && !my.socket) {
      if (told.facts !== undefined) my.facts = { ...told.facts, session: my.facts.session }
      if (told.line !== undefined) my.line = told.line
      if (told.brief !== undefined) my.brief = told.brief
      my.reachable = told.reachable
    }
    return ran.stdout
  } catch {
    return undefined
  }
}

async function deliver($: Dollar, event: HookEvent): Promise<Answer | string | undefined> {
  const result = await viaServer($, event)
  if (result !== undefined) {
    await resend($)
    return result
  }
  const learning = !my.store && !my.elsewhere // the first hand-over: no fallback
  const out = await viaHook($, event)
  if (out === undefined) my.kept.push(event)
  else if (my.socket && !learning) my.handed += 1 // in client mode the hook is the way
  return out
}

async function resend($: Dollar) {
  while (my.kept.length > 0) {
    const first = my.kept[0]
    if (first === undefined || (await viaServer($, first)) === undefined) return
    my.kept.shift()
  }
}

async function refresh($: Dollar) {
  const text = await ask($, 'GET', `/context/status?${contextQuery(my.facts, {})}`)
  if (text !== undefined) {
    try {
      my.line = String((JSON.parse(text) as { line?: unknown }).line ?? '')
    } catch {
      my.line = ''
    }
  }
  $.ui.status(statusText(my.line, my.reachable, my.handed, my.kept.length, my.elsewhere))
}

// The brief as the server renders it now (after a compaction: what changed since). In
// client mode the hook asked for it already (post-compact's answer, or `ondeck hook brief`).
async function briefNow($: Dollar, source: string): Promise<string | undefined> {
  const query = contextQuery(my.facts, { format: 'markdown', brief: 'true', source, cwd: my.cwd })
  return ask($, 'GET', `/context?${query}`)
}

async function begin($: Dollar, source: string) {
  const id = await $.session.id()
  my.cwd = await $.session.cwd()
  my.session = id
  my.facts = { session: id }
  my.elsewhere = false // a server refused before may serve the hooks' database by now
  const event = hookEvent('session-start', id, my.cwd, await $.clock.now(), { source })
  const result = await deliver($, event)
  if (typeof result === 'string') {
    my.brief = briefOfHookOutput(result)
  } else if (result !== undefined) {
    const c = (result.classification ?? {}) as {
      project?: { value?: string | null }
      side?: { value?: string | null }
      unclassified?: boolean
    }
    my.facts = {
      session: id,
      project: c.project?.value ?? undefined,
      side: c.side?.value ?? undefined,
      unclassified: c.unclassified === true,
    }
    my.brief = typeof result.context === 'string' ? result.context : ''
  }
  await refresh($)
}

// The session this process is in, recorded as started (once per session id; after a
// `/clear` the next one, whose start Claude Code announces to no hook).
async function current($: Dollar, source: string): Promise<void> {
  if (my.started !== undefined) await my.started
  const id = await $.session.id()
  if (my.started === undefined || id !== my.session) {
    my.started = begin($, my.session && id !== my.session ? 'clear' : source)
  }
  await my.started
}

export const register: Register = (on, options) => {
  my.python = typeof options.python === 'string' && options.python ? options.python : 'python3'
  my.socket = typeof options.socket === 'string' ? options.socket : ''
  // Written by `ondeck setup claude-code` when it could read the database's id; else the
  // first hand-over's hook tells it.
  my.store = typeof options.store === 'string' && /^[0-9a-f]{1,64}$/.test(options.store)
    ? options.store
    : ''

  on('session.start', async ($, e, next) => {
    const got = await next(e)
    await $.env.set('ONDECK_MOD', '1')
    await $.command.register({
      name: 'ondeck',
      description: "What is on deck: this session's brief and today's items",
    })
    const turns = await $.session.turns()
    my.started = begin($, turns > 0 ? 'resume' : 'startup')
    return got
  })

  on('prompt.context', async ($, e, next) => {
    const got = await next(e)
    await current($, 'startup')
    if (!my.brief) return got
    const blocks = got.blocks.filter((b) => b.name !== BLOCK)
    return { ...got, blocks: [...blocks, { name: BLOCK, text: my.brief }] }
  })

  on('turn.complete', async ($, e, next) => {
    const got = await next(e)
    if (e.agentId === undefined && e.reason === 'answer' && e.answer) {
      await current($, 'startup')
      const fields = { last_assistant_message: e.answer, turn_id: e.turnId }
      await deliver($, hookEvent('stop', my.session, my.cwd, await $.clock.now(), fields))
      await refresh($)
    }
    return got
  })

  on('session.compact', async ($, e, next) => {
    const got = await next(e)
    if (e.agentId === undefined && e.trigger !== 'precompute' && got.messages !== undefined) {
      await current($, 'startup')
      const at = await $.clock.now()
      const summary = got.messages.find((m) => m.role === 'user')?.text ?? ''
      const fields = { trigger: e.trigger, compact_summary: summary }
      await deliver($, hookEvent('post-compact', my.session, my.cwd, at, fields))
      my.brief = (await briefNow($, 'compact')) ?? my.brief
      await refresh($)
    }
    return got
  })

  on('session.end', async ($, e, next) => {
    const where = my.cwd || (await $.session.cwd())
    const event = hookEvent('session-end', e.sessionId, where, await $.clock.now(), {
      reason: e.reason,
    })
    await deliver($, event)
    if (e.sessionId === my.session) {
      my.started = undefined
      my.brief = ''
    }
    return next(e)
  })

  on('command.run', { command: 'ondeck' }, async ($) => {
    await current($, 'startup')
    if (my.socket) my.brief = (await briefNow($, 'command')) ?? my.brief
    else await runHook($, 'brief', '') // sets the brief and the line it was told
    await refresh($)
    const opened = await $.ui.open({ id: PANE, title: 'On deck', closeOnEscape: true })
    const text = opened.isPlaced ? 'On deck: opened beside the transcript.' : my.brief
    return { text: text || 'ondeck: no brief yet.' }
  })

  on('ui.render', { component: 'Pane', requestId: PANE }, async ($, e) => {
    const { Box, Markdown, Text } = $.ui.resolve(e)
    return (
      <Box flexDirection="column">
        <Text dimColor>{statusText(my.line, my.reachable, my.handed, my.kept.length, my.elsewhere)}</Text>
        <Markdown text={my.brief || 'ondeck: no brief yet.'} />
      </Box>
    )
  })
}
