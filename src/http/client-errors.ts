import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { fieldError, validationProblem, type Problem } from './problems.ts';

/**
 * Requests Node refuses before the app sees them (headers or URL over the maximum header size, a request
 * that is not HTTP, a client too slow to send its request) get a problem body like every other refusal, with
 * an X-Request-Id, instead of Node's bare status line. The connection is closed after it: the parser cannot
 * tell where the next request would start.
 */
export function problemOfClientError(code: string | undefined): Problem {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        type: '/problems/request-header-fields-too-large',
        status: 431,
        title: 'Request Header Fields Too Large',
        detail: 'The request line and headers together are larger than this server accepts (16 KiB).',
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        type: '/problems/payload-too-large',
        status: 413,
        title: 'Payload Too Large',
        detail: 'The chunk extensions of the body are larger than this server accepts.',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        type: '/problems/request-timeout',
        status: 408,
        title: 'Request Timeout',
        detail: 'The request was not received in time.',
      };
    default:
      return validationProblem(
        [fieldError('request', 'the request is not valid HTTP/1.1')],
        'The request could not be parsed.',
      ).problem;
  }
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node's own rule: answer only where no response of this connection has started (else the bytes would
    // corrupt it) and the socket can still be written to.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy(error);
      return;
    }
    const requestId = randomUUID();
    const problem = { ...problemOfClientError(error.code), requestId };
    const body = JSON.stringify(problem);
    socket.end(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
        'Content-Type: application/problem+json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Cache-Control: no-store\r\n' +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
