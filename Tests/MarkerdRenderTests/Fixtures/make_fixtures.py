#!/usr/bin/env python3
"""Generates the PNG decode fixtures with pypng (pip install pypng), independently of libpng.

For every NAME.png it writes NAME.rgba: the expected straight (not premultiplied) RGBA8 pixels,
width*height*4 bytes, computed here from the same pattern. Run from this directory:
    python3 make_fixtures.py
"""
import png

W, H = 9, 7  # odd sizes so every Adam7 pass has pixels and rows are not byte-aligned


def write(name, rows, expected, **kw):
    with open(name + ".png", "wb") as f:
        png.Writer(W, H, **kw).write(f, rows)
    data = bytearray()
    for row in expected:
        for px in row:
            data += bytes(px)
    assert len(data) == W * H * 4
    with open(name + ".rgba", "wb") as f:
        f.write(data)


def grid(fn):
    return [[fn(x, y) for x in range(W)] for y in range(H)]


def flat(rows):
    return [[v for px in row for v in px] for row in rows]


def scale16(v):
    # Exact round(v * 255 / 65535); ties cannot occur.
    return (v * 255 * 2 + 65535) // (2 * 65535)


# 1. Gray, 1 bit: checkerboard.
g = grid(lambda x, y: (x + y) % 2)
write("gray1", g, grid(lambda x, y: (255 * ((x + y) % 2),) * 3 + (255,)),
      greyscale=True, bitdepth=1)

# 2. Gray, 4 bit, tRNS gray 5 is transparent.
g = grid(lambda x, y: (x * 3 + y) % 16)
write("gray4_trns", g,
      grid(lambda x, y: (17 * ((x * 3 + y) % 16),) * 3 + ((0 if (x * 3 + y) % 16 == 5 else 255),)),
      greyscale=True, bitdepth=4, transparent=5)

# 3. Gray + alpha, 8 bit, interlaced.
ga = grid(lambda x, y: (x * 28 + 3, (y * 40 + x * 7) % 256))
write("gray8_alpha_interlaced", flat(ga), grid(lambda x, y: (ga[y][x][0],) * 3 + (ga[y][x][1],)),
      greyscale=True, alpha=True, bitdepth=8, interlace=True)

# 4. RGB, 8 bit, interlaced.
c = grid(lambda x, y: (x * 29, y * 41, (x * y * 13) % 256))
write("rgb8_interlaced", flat(c), grid(lambda x, y: c[y][x] + (255,)),
      greyscale=False, bitdepth=8, interlace=True)

# 5. RGB, 8 bit, tRNS colour (0, 41, 0) is transparent (x = 0, y = 1).
write("rgb8_trns", flat(c),
      grid(lambda x, y: c[y][x] + ((0 if c[y][x] == (0, 41, 0) else 255),)),
      greyscale=False, bitdepth=8, transparent=(0, 41, 0))

# 6. RGBA, 8 bit, every alpha from 0 to 255 represented.
rgba = grid(lambda x, y: (255 - x * 20, y * 30, 128, (x * 37 + y * 53) % 256 if (x, y) != (8, 6) else 255))
rgba[0][0] = (200, 100, 50, 0)
write("rgba8", flat(rgba), rgba, greyscale=False, alpha=True, bitdepth=8)

# 7. Palette, 4 bit, with per-entry alpha (tRNS).
palette = [(i * 17, 255 - i * 17, (i * 90) % 256, (i * 40) % 256 if i < 7 else 255) for i in range(16)]
p = grid(lambda x, y: (x + 2 * y) % 16)
write("palette4_trns", p, grid(lambda x, y: palette[(x + 2 * y) % 16]),
      palette=palette, bitdepth=4)

# 8. RGBA, 16 bit, interlaced: arbitrary 16-bit samples, scaled with rounding.
r16 = grid(lambda x, y: ((x * 7919 + y * 104729) % 65536, (x * 65521 + y) % 65536,
                         (x * y * 4099) % 65536, (x * 3001 + y * 9000 + 1000) % 65536))
write("rgba16_interlaced", flat(r16), grid(lambda x, y: tuple(scale16(v) for v in r16[y][x])),
      greyscale=False, alpha=True, bitdepth=16, interlace=True)

# 9. Gray, 16 bit.
g16 = grid(lambda x, y: (x * 7000 + y * 1234) % 65536)
write("gray16", g16, grid(lambda x, y: (scale16(g16[y][x]),) * 3 + (255,)),
      greyscale=True, bitdepth=16)
