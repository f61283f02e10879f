// lint-as: src/util/fixture.ts
// expect: layers/imports: src/util must not import src/protocol; it may import no other layer (docs/architecture.md, "Layers")
import { ErrorCode } from '../protocol';

export const c = ErrorCode;
