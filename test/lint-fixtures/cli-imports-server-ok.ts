// lint-as: src/cli/fixture.ts
import { ExecServer } from '../server';
import { ExecServerClient } from '../client';

export const both = [ExecServer, ExecServerClient];
