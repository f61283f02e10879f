// lint-as: src/protocol/fixture.ts
// expect: layers/imports: src/protocol must not import src/rpc; it may import util (docs/architecture.md, "Layers")
// expect: layers/imports: src/protocol must not import src/rpc; it may import util (docs/architecture.md, "Layers")
export * from '../rpc';
export { RpcPeer } from '../rpc/peer';
