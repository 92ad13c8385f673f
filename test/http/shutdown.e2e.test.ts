/**
 * A process told to stop (SIGTERM, what an orchestrator sends) drains: it stops accepting connections at once,
 * answers the request it is in the middle of, from stores that are still open, then closes its stores and
 * exits 0, its log written to the last line. The request is held in flight by the test itself (its body is sent only when the test says so),
 * and the server's "100 Continue" tells the test that the request has reached the app: nothing here waits for
 * time to pass.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { killAllChildren, running, spawnWalletOps, within, type WalletOpsProcess } from '../support/processes.ts';
import { tempDir } from '../support/temp-dir.ts';
import { tryConnect } from '../support/tcp.ts';

afterAll(killAllChildren);

/** Resolves with the first line of the process's log that contains `text`, as JSON. */
function logLine(process: WalletOpsProcess, text: string): Promise<Record<string, unknown>> {
  return within(
    new Promise((resolve) => {
      const seen = () =>
        process
          .output()
          .split('\n')
          .find((line) => line.includes(text));
      const check = () => {
        const line = seen();
        if (line === undefined) return;
        process.child.stdout!.off('data', check);
        resolve(JSON.parse(line) as Record<string, unknown>);
      };
      process.child.stdout!.on('data', check);
      check();
    }),
    30_000,
    `log line "${text}"`,
  );
}

/** Everything the server sends on the socket until it closes the connection. */
function received(socket: Socket): { text: () => string; untilClosed: Promise<void> } {
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  return { text: () => text, untilClosed: once(socket, 'close').then(() => undefined) };
}

describe('wallet-ops stopped with SIGTERM', () => {
  const dir = tempDir('shutdown-');
  afterAll(() => dir.cleanup());

  it('given a request in flight, when the process gets SIGTERM, then new connections are refused, the request is answered from open stores with its connection closed, and the process exits 0', async () => {
    const server = spawnWalletOps(dir.path, [], { LOG_LEVEL: 'info' });
    const { port } = (await logLine(server, 'wallet-ops started')) as { port: number };
    expect(port).toBeGreaterThan(0);

    // A console login (its form's token and cookie first) whose body is still to come: the app is reading it
    // when the signal arrives. Once the body is in, the login counts the attempt in the read store and looks the
    // user up in the event store, so its answer says whether the stores were still open.
    const origin = `http://127.0.0.1:${port}`;
    const form = await fetch(`${origin}/console/login`);
    const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
    const cookie = form.headers.getSetCookie()[0]?.split(';')[0];
    expect(token && cookie).toBeTruthy();
    const body = `email=nobody%40example.test&password=wrong+password&_csrf=${encodeURIComponent(token!)}`;
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const response = received(socket);
    socket.write(
      `POST /console/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: ${origin}\r\nCookie: ${cookie}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    // Node answers 100 Continue when it hands the request to the app.
    await within(
      new Promise<void>((resolve) => socket.on('data', () => response.text().includes('100 Continue') && resolve())),
      10_000,
      '100 Continue',
    );

    server.child.kill('SIGTERM');
    await logLine(server, 'shutting down');
    expect(await tryConnect(port)).toBe('refused');
    expect(running(server)).toBe(true); // still draining: its request is unanswered

    socket.write(body);
    await within(response.untilClosed, 10_000, 'the answer to the request in flight');
    const answer = response.text().slice(response.text().indexOf('\r\n\r\n') + 4);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
    // Refused as a wrong password, by a handler that still had its stores (closed stores: a 503).
    expect(status, answer).toBe(401);
    expect(answer.toLowerCase()).toContain('connection: close');

    expect(await within(server.exited, 15_000, 'exit after draining')).toEqual({ code: 0, signal: null });
    // The log is written asynchronously: the stop waits for it, so the last request's line is not lost.
    const requests = server
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(requests.at(-1)).toMatchObject({ method: 'POST', path: '/console/login', status: 401 });
  });
});
