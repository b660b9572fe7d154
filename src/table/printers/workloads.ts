/**
 * Printers ported from k8s.io/kubernetes pkg/printers/internalversion/printers.go (v1.37.2).
 */
import type { Printer } from '../model.ts';

export const PRINTERS: readonly Printer[] = [];
