// The virtual machine: qemu with KVM, OVMF (UEFI) booting GRUB from the ESP disk, the slots and
// the data disk on virtio-blk, qemu's user network (the guest reaches the host's loopback at
// 10.0.2.2). A reboot inside the guest is a real one: qemu resets the machine and keeps running,
// and the firmware, GRUB and the kernel start over. The serial console goes to a file.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * KVM when it can run a firmware: this machine's /dev/kvm is PVM (kvm_pvm: paravirtualized, for
 * guest kernels built for it, no real mode), which cannot run OVMF, so the default is qemu's
 * TCG (software emulation): slower, but the same firmware, bootloader, kernel and reboots.
 * FLEET_E2E_ACCEL=kvm uses KVM on a machine with hardware virtualization.
 */
function accel(): string[] {
  return process.env.FLEET_E2E_ACCEL === "kvm" ? ["-enable-kvm", "-cpu", "host"] : ["-accel", "tcg,thread=multi", "-cpu", "max"];
}

export interface VmDisks { esp: string; slotA: string; slotB: string; data: string }

export interface Vm {
  serialLog: string;
  /** the serial console so far */
  serial(): string;
  /** how many times GRUB chose a slot so far (each one a boot) */
  boots(): Array<{ slot: string; line: string }>;
  exited(): boolean;
  stop(): Promise<void>;
}

export function startVm(work: string, disks: VmDisks, opts: { memoryMiB?: number; cpus?: number } = {}): Vm {
  const vars = path.join(work, "OVMF_VARS.fd");
  fs.copyFileSync("/usr/share/OVMF/OVMF_VARS.fd", vars);
  const serialLog = path.join(work, "serial.log");
  fs.writeFileSync(serialLog, "");
  const drive = (file: string) => ["-drive", `if=virtio,format=raw,cache=unsafe,file=${file}`];
  const child: ChildProcess = spawn("qemu-system-x86_64", [
    ...accel(), "-machine", "q35", "-m", String(opts.memoryMiB ?? 1024), "-smp", String(opts.cpus ?? 1),
    "-drive", "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE.fd",
    "-drive", `if=pflash,format=raw,file=${vars}`,
    ...drive(disks.esp), ...drive(disks.slotA), ...drive(disks.slotB), ...drive(disks.data),
    "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0,romfile=",
    "-display", "none", "-serial", `file:${serialLog}`, "-monitor", "none", "-no-user-config", "-nodefaults",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const serial = () => fs.readFileSync(serialLog, "utf8");
  return {
    serialLog,
    serial,
    // GRUB's line comes twice (its serial terminal and the firmware's console, which OVMF also
    // writes to the serial port), on one line: one boot per line
    boots: () => serial().split("\n").flatMap((line) => {
      const m = /fleet-e2e grub: (ORDER=.*?-> slot ([AB]?))/.exec(line);
      return m ? [{ slot: m[2], line: m[1] }] : [];
    }),
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    }),
    get stderr() { return stderr; },
  } as Vm;
}
