// lint-as: src/core/fixture.ts
// expect: layers/imports: '../newlayer/thing' is not in a known layer of src/ (docs/architecture.md, "Layers")
import { thing } from '../newlayer/thing';

export const t = thing;
