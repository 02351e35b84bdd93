"""Security: workspace path confinement (`paths`), shell permission decisions (`shell`,
`shell_rules`), the shell runner (`run`) and the OS sandbox (`sandbox`).

Each caller imports the module it uses: importing this package loads nothing else, so the
config's sandbox defaults (`defaults`) do not bring the shell parser into every process
before its first `bash` call."""
