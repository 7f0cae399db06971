// SPDX-License-Identifier: Apache-2.0

extension QRCode.Matrix {
    /// The symbol as an SVG document: a light background and one `<path>` of the dark modules,
    /// each row's runs of dark modules drawn as one rectangle (`M x y h n v1 h -n z`), in module
    /// units (`viewBox`), `scale` pixels a module (`width`, `height`), and a light quiet zone of
    /// `border` modules. Both are clamped as `png` clamps them. `crispEdges`: no anti-aliased seams.
    public func svg(scale: Int = 8, border: Int = 4) -> String {
        let scale = scale.clamped(to: QRCode.scales)
        let border = border.clamped(to: QRCode.borders)
        let modulesWide = size + 2 * border
        let pixels = modulesWide * scale
        var path = ""
        path.reserveCapacity(size * size)
        for y in 0..<size {
            var x = 0
            while x < size {
                guard modules[y * size + x] != 0 else {
                    x += 1
                    continue
                }
                var run = 1
                while x + run < size, modules[y * size + x + run] != 0 { run += 1 }
                path += "M\(border + x) \(border + y)h\(run)v1h-\(run)z"
                x += run
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(pixels)" height="\(pixels)" \
            viewBox="0 0 \(modulesWide) \(modulesWide)" shape-rendering="crispEdges">\
            <rect width="\(modulesWide)" height="\(modulesWide)" fill="#fff"/>\
            <path fill="#000" d="\(path)"/></svg>

            """
    }
}
