import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OtlpRequest } from '../../server/export/otlp.ts';

/** A real OTLP/HTTP receiver on loopback: it keeps every request to /v1/traces and answers as told. */
export interface OtlpReceiver {
  /** The base URL to give `--endpoint`. */
  url: string;
  requests: { path: string; contentType: string | undefined; body: string }[];
  /** What the next requests are answered: accepted, or a partial success rejecting this many spans. */
  rejectSpans: number;
  spans(): OtlpRequest['resourceSpans'][number]['scopeSpans'][number]['spans'];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  let server: Server;
  const receiver: OtlpReceiver = {
    url: '',
    requests,
    rejectSpans: 0,
    spans: () => requests.flatMap((r) => (JSON.parse(r.body) as OtlpRequest).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      if (receiver.rejectSpans > 0) {
        response.end(JSON.stringify({ partialSuccess: { rejectedSpans: String(receiver.rejectSpans), errorMessage: 'spans over quota' } }));
        return;
      }
      requests.push({ path: request.url, contentType: request.headers['content-type'], body });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
