// The API of src/rpc: the JSON-RPC peer, its router and transports, as the client and the server use
// them (docs/architecture.md, "Layers"). Files of src/rpc import each other directly, never this index.

// A peer (ids, pending calls) over a transport, the server's typed router, its errors.
export { RpcPeer } from './peer';
export { Router } from './router';
export { ConnectionClosedError, RpcError } from './errors';
export { encodeNotification } from './message';

// Transports: one message per frame, the bounds of a frame and of an answer.
export { MAX_ANSWER_BYTES, MAX_FRAME_BYTES, type Transport } from './transport';
export { StdioTransport } from './stdioTransport';
export { WebSocketTransport } from './wsTransport';

// V8's young generation tuned for our long-lived servers (serve, the daemon).
export { tuneYoungGeneration } from './youngGc';
