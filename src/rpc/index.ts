export * from './errors';
export * from './message';
export * from './peer';
export * from './router';
export * from './stdioTransport';
export * from './transport';
export * from './wsTransport';
