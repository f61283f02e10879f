export * from './common';
export * from './describeError';
export * from './environment';
export * from './fs';
export * from './http';
export * from './methods';
export * from './process';
export * from './session';
