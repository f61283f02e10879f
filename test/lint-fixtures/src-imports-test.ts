// lint-as: src/util/fixture.ts
// expect: layers/imports: src/ never imports test/ (docs/architecture.md, "Layers")
import { REPO_ROOT } from '../../test/helpers/servers';

export const r = REPO_ROOT;
