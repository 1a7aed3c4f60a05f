import { describe, expect, mock, test, tier } from 'claude-code/testing'

tier('user')

const STORE = 'a1b2c3d4e5f60718' // the id of the hooks' database
const SOCKET = '/data/run/server-7400.sock'
const OPTIONS = { options: { python: '/venv/bin/python', socket: SOCKET, store: STORE } }
const UNTOLD = { options: { python: '/venv/bin/python', socket: SOCKET } } // an older setup
const CLIENT = { options: { python: '/venv/bin/python', socket: '' } }
const SESSION = 'sess-1'
const BRIEF = '# On deck 2026-12-02\n\n## Due\n- #1 보고서 쓰기 (due today)\n'

type Sent = { url: string; body: string; socketPath?: string; store?: string }
type Ran = { argv: readonly string[]; stdin?: string; env?: Record<string, string> }

// The socket as the engine's stat shows it, and what the check (`python -I -c`) says of it.
type Place = { dirIsLink: boolean; socketMtime: number; verdict: string }

// The engine beneath the mod: a session in /work, and ondeck's server answering (or not).
function world(on: any, serverUp: () => boolean, hookOk: () => boolean, serves = () => STORE) {
  const sent: Sent[] = []
  const ran: Ran[] = []
  const checks: (readonly string[])[] = []
  const logged: { text: string; to?: string }[] = []
  const place: Place = { dirIsLink: false, socketMtime: 1, verdict: 'ok' }
  const status: (string | undefined)[] = []
  const at = { session: SESSION } // a `/clear` gives the process a new session id
  mock.clock(on, { now: Date.UTC(2026, 11, 2, 9, 0) })
  mock.env(on, {})
  on('session.start', (_: unknown, e: { cwd: string }) => ({ cwd: e.cwd }))
  on('session.id', () => ({ value: at.session }))
  on('session.cwd', () => ({ value: '/work' }))
  on('session.turns', () => ({ value: 0 }))
  on('command.register', () => ({ value: { command: 'ondeck' } }))
  on('ui.status', (_: unknown, e: { text?: string }) => {
    status.push(e.text)
    return { value: undefined }
  })
  on('prompt.context', (_: unknown, e: unknown) => e)
  on('turn.complete', (_: unknown, e: { answer: string }) => ({ text: e.answer }))
  on('env.set', () => ({ value: {} }))
  on('session.end', (_: unknown, e: { sessionId: string }) => ({ sessionId: e.sessionId }))
  on('ui.open', () => ({ value: { isPlaced: true } }))
  on('session.compact', () => ({ messages: [{ role: 'user', text: 'We renewed the certificate.', toolUses: [] }] }))
  on('http.fetch', (_: unknown, e: { url: string; init?: { body?: string; socketPath?: string; headers?: Record<string, string> } }) => {
    if (!serverUp()) return { value: { status: 503, ok: false, headers: {}, text: '' } }
    const store = e.init?.headers?.['x-ondeck-store-expected']
    sent.push({ url: e.url, body: e.init?.body ?? '', socketPath: e.init?.socketPath, store })
    if (store !== undefined && store !== serves()) {
      return { value: { status: 409, ok: false, headers: {}, text: '{"error":{"code":"store_mismatch"}}' } }
    }
    const text = e.url.includes('/context/status')
      ? JSON.stringify({ line: 'ondeck · 1 due' })
      : e.url.includes('/context?')
      ? BRIEF
      : JSON.stringify({
          results: [
            {
              outcome: 'applied',
              classification: { project: { value: 'website' }, side: { value: null } },
              context: BRIEF,
            },
          ],
        })
    return { value: { status: 200, ok: true, headers: {}, text } }
  })
  on('fs.stat', (_: unknown, e: { path: string }) => {
    const dir = e.path === '/data/run'
    const kind = dir ? 'dir' : 'other'
    const mtimeMs = dir ? 1 : place.socketMtime
    return { value: { kind, size: 0, mtimeMs, isLink: dir && place.dirIsLink } }
  })
  on('ui.log', (_: unknown, e: { text: string; to?: string }) => {
    logged.push({ text: e.text, to: e.to })
    return { value: undefined }
  })
  on('process.run', (_: unknown, e: { argv: readonly string[]; init?: Ran }) => {
    if (e.argv[2] === '-c') {
      // the socket's check, not a hook
      checks.push(e.argv)
      const stdout = `${place.verdict}\n`
      return { value: { exitCode: 0, stdout, stderr: '', isStdoutTruncated: false, isStderrTruncated: false } }
    }
    ran.push({ argv: e.argv, stdin: e.init?.stdin, env: e.init?.env })
    const verb = e.argv.at(-1) ?? ''
    const start = verb === 'session-start'
    const source = start ? JSON.parse(e.init?.stdin ?? '{}').source : undefined
    const said: Record<string, unknown> = start
      ? { hookSpecificOutput: { additionalContext: `BRIEF FROM THE HOOK (${source})` } }
      : {}
    if (e.init?.env?.ONDECK_MOD_STORE === '1') said.ondeck = { store: STORE } // as it learned it
    const asked = e.init?.env?.ONDECK_MOD_STATUS
    if (asked !== undefined) {
      // a client-mode hook: the line it asked the server for, with its own token, and
      // after a compaction or for `/ondeck` the brief
      const brief = verb === 'post-compact' || verb === 'brief' ? { brief: `BRIEF AFTER ${verb} (${asked})` } : {}
      said.ondeck = serverUp()
        ? { reachable: true, line: `ondeck · 2 due (${asked})`, ...(start ? { facts: { project: 'website', side: 'work' } } : {}), ...brief }
        : { reachable: false }
    }
    const out = Object.keys(said).length > 0 ? JSON.stringify(said) : ''
    return {
      value: {
        exitCode: hookOk() ? 0 : 1,
        stdout: out,
        stderr: '',
        isStdoutTruncated: false,
        isStderrTruncated: false,
      },
    }
  })
  return { sent, ran, checks, logged, place, status, at }
}

// The /ondeck pane as the terminal shows it.
const pane = ($: any) =>
  $.ui.mount({
    plugin: 'ondeck',
    surface: 'terminal',
    component: 'Pane',
    requestId: 'ondeck',
    props: { title: 'On deck', isFocused: false, bodyColumns: 60, placement: 'dock', scroll: { offset: 0, bodyRows: 20 } },
  } as never)

const events = (sent: Sent[]) =>
  sent
    .filter((s) => s.url.endsWith('/sessions/hook-events'))
    .map((s) => JSON.parse(s.body).events[0])

describe('register', () => {
  test('a session goes to the server through the owner socket, its brief to the model', OPTIONS, async ($, on) => {
    const w = world(on, () => true, () => true)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    const context = await $.prompt.context({ blocks: [{ name: 'currentDate', text: 'today' }] })
    expect(context.blocks.map((b) => b.name)).toEqual(['currentDate', 'ondeck'])
    expect(context.blocks[1]?.text).toBe(BRIEF)
    await $.turn.complete({
      answer: '끝났어요', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer',
    })
    await $.session.end({ reason: 'other', sessionId: SESSION, resume: { sessionId: SESSION } } as never)
    const sentEvents = events(w.sent)
    expect(sentEvents.map((e) => e.hook)).toEqual(['session-start', 'stop', 'session-end'])
    expect(sentEvents[1].payload).toEqual({
      session_id: SESSION, cwd: '/work', hook_event_name: 'Stop',
      event_at: '2026-12-02T09:00:00.000Z', last_assistant_message: '끝났어요', turn_id: 't1',
    })
    expect(sentEvents[1].transcript_size).toBe(-1)
    expect(w.sent.every((s) => s.socketPath === SOCKET && s.store === STORE)).toBe(true)
    expect(w.ran).toEqual([])
    expect(w.status.at(-1)).toBe('ondeck · 1 due')
  })

  test('the socket is checked before the first request, and again only once it changed', OPTIONS, async ($, on) => {
    const w = world(on, () => true, () => true)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    await $.prompt.context({ blocks: [] })
    await $.turn.complete({ answer: '하나', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer' })
    expect(w.checks).toEqual([['/venv/bin/python', '-I', '-c', expect.any(String), '/data/run/server-7400.sock']])
    expect(w.checks[0]?.[3]).toContain('owner_socket_problem')
    expect(events(w.sent).map((e) => e.hook)).toEqual(['session-start', 'stop'])
    w.place.socketMtime = 2 // the server made its socket again
    await $.turn.complete({ answer: '둘', durationMs: 5, isAborted: false, turnId: 't2', reason: 'answer' })
    expect(w.checks.length).toBe(2)
    expect(w.ran).toEqual([])
  })

  test('a socket that fails the check gets nothing: the event goes to `ondeck hook`, the debug log says why', OPTIONS, async ($, on) => {
    const w = world(on, () => true, () => true)
    w.place.verdict = '/data/run has mode 755: the group or others may reach it (it must be 0700)'
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    await $.prompt.context({ blocks: [] })
    expect(w.sent).toEqual([])
    expect(w.ran.map((r) => r.argv.at(-1))).toEqual(['session-start'])
    expect(w.logged).toContainEqual({
      text: `ondeck: nothing sent through /data/run/server-7400.sock: ${w.place.verdict}`,
      to: 'debug',
    })
    w.place.verdict = 'ok'
    w.place.dirIsLink = true // a symlink: refused by the stat alone, whatever the check says
    await $.turn.complete({ answer: 'x', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer' })
    expect(w.sent).toEqual([])
    expect(w.ran.map((r) => r.argv.at(-1))).toEqual(['session-start', 'stop'])
    expect(w.logged.at(-1)?.text).toBe('ondeck: nothing sent through /data/run/server-7400.sock: /data/run is a symlink or not a directory')
  })

  test('with the server away an event goes to `ondeck hook`, and the status line says so', OPTIONS, async ($, on) => {
    const w = world(on, () => false, () => true)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    const context = await $.prompt.context({ blocks: [] })
    expect(context.blocks[0]?.text).toBe('BRIEF FROM THE HOOK (startup)')
    await $.turn.complete({
      answer: 'done', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer',
    })
    expect(w.ran.map((r) => r.argv)).toEqual([
      ['/venv/bin/python', '-I', '-m', 'ondeck', 'hook', 'session-start'],
      ['/venv/bin/python', '-I', '-m', 'ondeck', 'hook', 'stop'],
    ])
    expect(JSON.parse(w.ran[1]?.stdin ?? '{}').last_assistant_message).toBe('done')
    expect(w.ran[1]?.env).toEqual({ ONDECK_MOD: '', ONDECK_MOD_STORE: '1' })
    expect(w.status.at(-1)).toContain('server unreachable')
    expect(w.status.at(-1)).toContain('2 events handed to `ondeck hook`')
  })

  test('what neither takes is kept and sent with the next event', OPTIONS, async ($, on) => {
    let up = false
    const w = world(on, () => up, () => false)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    await $.prompt.context({ blocks: [] })
    expect(w.status.at(-1)).toContain('1 event kept to resend')
    up = true
    await $.turn.complete({
      answer: 'back', durationMs: 5, isAborted: false, turnId: 't2', reason: 'answer',
    })
    expect(events(w.sent).map((e) => e.hook)).toEqual(['stop', 'session-start'])
    expect(w.status.at(-1)).toBe('ondeck · 1 due')
  })

  test('in client mode the hook asks for the status line with its token; the mod holds none', CLIENT, async ($, on) => {
    let up = true
    const w = world(on, () => up, () => true)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    const context = await $.prompt.context({ blocks: [] })
    expect(context.blocks[0]?.text).toBe('BRIEF FROM THE HOOK (startup)')
    await $.turn.complete({
      answer: 'done', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer',
    })
    expect(w.sent).toEqual([]) // no request of the mod's own: it has no socket and no token
    expect(w.ran.map((r) => r.env)).toEqual([
      { ONDECK_MOD: '', ONDECK_MOD_STATUS: 'session=sess-1' },
      { ONDECK_MOD: '', ONDECK_MOD_STATUS: 'project=website&side=work&session=sess-1' },
    ])
    expect(w.status.at(-1)).toBe('ondeck · 2 due (project=website&side=work&session=sess-1)')
    up = false
    await $.turn.complete({
      answer: 'later', durationMs: 5, isAborted: false, turnId: 't2', reason: 'answer',
    })
    expect(w.status.at(-1)).toBe('ondeck · 2 due (project=website&side=work&session=sess-1) · ⚠ server unreachable')
  })

  test('in client mode the brief comes again after a compaction, a /clear and for /ondeck, told by the hook', CLIENT, async ($, on) => {
    const w = world(on, () => true, () => true)
    await $.session.start({ cwd: '/work', surface: 'terminal', isInteractive: true })
    await $.prompt.context({ blocks: [] })
    await $.session.compact({ trigger: 'manual', messages: [{ role: 'user', text: 'the whole talk', toolUses: [] }] } as never)
    const scoped = 'project=website&side=work&session=sess-1'
    const compacted = await $.prompt.context({ blocks: [] })
    expect(compacted.blocks.map((b) => b.text)).toEqual([`BRIEF AFTER post-compact (${scoped})`])
    const compaction = w.ran.at(-1)
    expect(compaction?.argv.at(-1)).toBe('post-compact')
    expect(JSON.parse(compaction?.stdin ?? '{}').compact_summary).toBe('We renewed the certificate.')

    const opened = await $.command.run({ command: 'ondeck', args: '', origin: { kind: 'composer' } } as never)
    expect(opened.text).toBe('On deck: opened beside the transcript.')
    expect(w.ran.at(-1)).toEqual({
      argv: ['/venv/bin/python', '-I', '-m', 'ondeck', 'hook', 'brief'],
      stdin: '',
      env: { ONDECK_MOD: '', ONDECK_MOD_STATUS: scoped },
    })
    const ui = await pane($)
    expect((await ui.find({ type: 'Markdown' }))?.text).toBe(`BRIEF AFTER brief (${scoped})`)
    expect((await ui.find({ type: 'Text', text: /2 due/ }))?.text).toBe(`ondeck · 2 due (${scoped})`)
    await ui.unmount()

    w.at.session = 'sess-2' // `/clear`: the next prompt is a new session's, recorded as one
    const cleared = await $.prompt.context({ blocks: [] })
    expect(cleared.blocks.map((b) => b.text)).toEqual(['BRIEF FROM THE HOOK (clear)'])
    const start = w.ran.at(-1)
    expect(start?.argv.at(-1)).toBe('session-start')
    expect(JSON.parse(start?.stdin ?? '{}')).toMatchObject({ session_id: 'sess-2', source: 'clear' })
    expect(start?.env).toEqual({ ONDECK_MOD: '', ONDECK_MOD_STATUS: 'session=sess-2' })
    expect(w.sent).toEqual([]) // the mod asked nothing itself: no socket, no token
  })

  test('not told which database is the hooks\', the mod learns it from its first hand-over', UNTOLD, async ($, on) => {
    const w = world(on, () => true, () => true)
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    const context = await $.prompt.context({ blocks: [] })
    expect(context.blocks[0]?.text).toBe('BRIEF FROM THE HOOK (startup)')
    expect(w.ran.map((r) => r.argv.at(-1))).toEqual(['session-start'])
    expect(w.ran[0]?.env).toEqual({ ONDECK_MOD: '', ONDECK_MOD_STORE: '1' })
    await $.turn.complete({
      answer: 'done', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer',
    })
    expect(events(w.sent).map((e) => e.hook)).toEqual(['stop'])
    expect(w.sent.every((s) => s.store === STORE)).toBe(true)
    expect(w.status.at(-1)).toBe('ondeck · 1 due') // the learning hand-over is no fallback
  })

  test('a server serving another database is sent nothing: the events go to `ondeck hook`', OPTIONS, async ($, on) => {
    const w = world(on, () => true, () => true, () => 'ffff0000ffff0000')
    await $.session.start({ cwd: '/work', surface: null, isInteractive: false })
    await $.prompt.context({ blocks: [] })
    await $.turn.complete({
      answer: 'done', durationMs: 5, isAborted: false, turnId: 't1', reason: 'answer',
    })
    // Refused (409) with the id sent; each event then goes to the hook, which stores it in
    // the hooks' own database (or spools it), never into the server's.
    expect(w.ran.map((r) => r.argv.at(-1))).toEqual(['session-start', 'stop'])
    expect(w.sent.map((s) => s.url.split('/api/v1')[1])).toEqual(['/sessions/hook-events'])
    expect(w.sent[0]?.store).toBe(STORE)
    expect(w.status.at(-1)).toContain('the server serves another database')
    expect(w.status.at(-1)).not.toContain('unreachable')
  })

  test('/ondeck opens a pane with the brief and the status line', OPTIONS, async ($, on) => {
    const w = world(on, () => true, () => true)
    await $.session.start({ cwd: '/work', surface: 'terminal', isInteractive: true })
    const ran = await $.command.run({
      command: 'ondeck',
      args: '',
      origin: { kind: 'composer' },
    } as never)
    expect(ran.text).toBe('On deck: opened beside the transcript.')
    const queried = w.sent.map((s) => s.url).filter((u) => u.includes('/context?'))
    expect(queried.at(-1)).toContain('format=markdown')
    const ui = await pane($)
    expect((await ui.find({ type: 'Text', text: /1 due/ }))?.text).toBe('ondeck · 1 due')
    expect((await ui.find({ type: 'Markdown' }))?.text).toContain('보고서 쓰기')
    await ui.unmount()
  })
})
