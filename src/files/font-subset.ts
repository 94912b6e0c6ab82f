/**
 * Font subsets written synchronously. @pdf-lib/fontkit writes a subset through a Node-style Readable stream whose
 * events run on a browserify `process.nextTick` shim: one queue per isolate, drained by a timer that belongs to the
 * request that happened to schedule it. Two PDFs written at once in one isolate, or one written by a request that
 * ends first, leave the other waiting on a timer that never fires in its own context, and workerd cancels it as hung
 * (seen in the test pool between a request and a queue batch; production isolates serve requests side by side too).
 * pdf-lib also takes a subset with a synchronous `encode()`: this gives it one, writing into a plain byte buffer.
 */
interface FontkitSubset {
  includeGlyph(glyph: unknown): number;
  cff?: unknown;
  encode(stream: unknown): void;
}

/** The writer restructure's encoders call: the EncodeStream interface, over a growing byte array. */
class ByteWriter {
  pos = 0;
  private bytes = new Uint8Array(64 * 1024);
  private view = new DataView(this.bytes.buffer);

  private ensure(n: number) {
    if (this.pos + n <= this.bytes.length) return;
    const next = new Uint8Array(Math.max(this.bytes.length * 2, this.pos + n));
    next.set(this.bytes);
    this.bytes = next;
    this.view = new DataView(next.buffer);
  }

  private put(n: number, write: (view: DataView, at: number) => void) {
    this.ensure(n);
    write(this.view, this.pos);
    this.pos += n;
  }

  writeUInt8 = (v: number) => this.put(1, (d, at) => d.setUint8(at, v));
  writeInt8 = (v: number) => this.put(1, (d, at) => d.setInt8(at, v));
  writeUInt16BE = (v: number) => this.put(2, (d, at) => d.setUint16(at, v));
  writeUInt16LE = (v: number) => this.put(2, (d, at) => d.setUint16(at, v, true));
  writeInt16BE = (v: number) => this.put(2, (d, at) => d.setInt16(at, v));
  writeInt16LE = (v: number) => this.put(2, (d, at) => d.setInt16(at, v, true));
  writeUInt24BE = (v: number) => this.put(3, (d, at) => (d.setUint8(at, (v >>> 16) & 0xff), d.setUint16(at + 1, v & 0xffff)));
  writeUInt24LE = (v: number) => this.put(3, (d, at) => (d.setUint16(at, v & 0xffff, true), d.setUint8(at + 2, (v >>> 16) & 0xff)));
  writeInt24BE = (v: number) => this.writeUInt24BE(v < 0 ? v + 0x1000000 : v);
  writeInt24LE = (v: number) => this.writeUInt24LE(v < 0 ? v + 0x1000000 : v);
  writeUInt32BE = (v: number) => this.put(4, (d, at) => d.setUint32(at, v));
  writeUInt32LE = (v: number) => this.put(4, (d, at) => d.setUint32(at, v, true));
  writeInt32BE = (v: number) => this.put(4, (d, at) => d.setInt32(at, v));
  writeInt32LE = (v: number) => this.put(4, (d, at) => d.setInt32(at, v, true));
  writeFloatBE = (v: number) => this.put(4, (d, at) => d.setFloat32(at, v));
  writeFloatLE = (v: number) => this.put(4, (d, at) => d.setFloat32(at, v, true));
  writeDoubleBE = (v: number) => this.put(8, (d, at) => d.setFloat64(at, v));
  writeDoubleLE = (v: number) => this.put(8, (d, at) => d.setFloat64(at, v, true));

  writeBuffer(buffer: Uint8Array) {
    this.ensure(buffer.length);
    this.bytes.set(buffer, this.pos);
    this.pos += buffer.length;
  }

  writeString(text: string, encoding = "ascii") {
    if (encoding === "utf16be" || encoding === "utf16le" || encoding === "ucs2") {
      for (const unit of Array.from({ length: text.length }, (_, i) => text.charCodeAt(i))) (encoding === "utf16be" ? this.writeUInt16BE : this.writeUInt16LE)(unit);
    } else this.writeBuffer(encoding === "utf8" ? new TextEncoder().encode(text) : Uint8Array.from(text, (ch) => ch.charCodeAt(0) & 0xff));
  }

  fill(value: number, length: number) {
    this.ensure(length);
    this.bytes.fill(value, this.pos, this.pos + length);
    this.pos += length;
  }

  end() {}

  result(): Uint8Array {
    return this.bytes.slice(0, this.pos);
  }
}

/** The subset pdf-lib is handed: the same glyph bookkeeping, written with `encode()` instead of a stream. */
export function synchronousSubset(subset: FontkitSubset) {
  return {
    includeGlyph: (glyph: unknown) => subset.includeGlyph(glyph),
    get cff() {
      return subset.cff;
    },
    encode(): Uint8Array {
      const writer = new ByteWriter();
      subset.encode(writer);
      return writer.result();
    },
  };
}
