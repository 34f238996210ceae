package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuServers are the servers a benchmark may drive on its own machine,
// whose CPU it reports beside its own (see sampleCPU).
var cpuServers = []string{"mariadbd", "mysqld", "redis-server", "nats-server"}

// clockTicks is the unit of the times in /proc/PID/stat: USER_HZ, 100 on
// every Linux the kernel's ABI promises it to user space.
const clockTicks = 100

// cpuSample is the CPU time (user and system) each process had used at one
// moment: this process, as "quan", and every running cpuServers process,
// by pid. It reads /proc, so it is empty where there is none.
type cpuSample map[int]procTime

type procTime struct {
	name string
	used time.Duration
}

// sampleCPU reads the CPU time of this process and of cpuServers from
// /proc. Processes it cannot read are left out.
func sampleCPU() cpuSample {
	s := cpuSample{}
	self := os.Getpid()
	if used, err := readProcCPU(self); err == nil {
		s[self] = procTime{"quan", used}
	}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, path := range comms {
		comm, err := os.ReadFile(path)
		if err != nil || !slices.Contains(cpuServers, strings.TrimSpace(string(comm))) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == self {
			continue
		}
		if used, err := readProcCPU(pid); err == nil {
			s[pid] = procTime{strings.TrimSpace(string(comm)), used}
		}
	}
	return s
}

// readProcCPU returns the CPU time process pid has used.
func readProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat returns utime + stime of a /proc/PID/stat line. The
// command name, in parentheses, may hold spaces and parentheses itself:
// the fields are counted from the last ')'.
func parseProcStat(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("not a /proc stat line: %.80q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("a /proc stat line of %d fields: %.80q", len(f)+2, line)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q, stime %q in a /proc stat line", f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procUse is the CPU a process (or the processes of one name) used
// between two samples.
type procUse struct {
	name string
	used time.Duration
}

// since returns what each process name used from before to s, this
// process first, then the servers in cpuServers' order; processes not in
// both samples are left out.
func (s cpuSample) since(before cpuSample) []procUse {
	by := map[string]time.Duration{}
	for pid, p := range s {
		if b, ok := before[pid]; ok && b.name == p.name {
			by[p.name] += p.used - b.used
		}
	}
	var uses []procUse
	for _, name := range append([]string{"quan"}, cpuServers...) {
		if used, ok := by[name]; ok {
			uses = append(uses, procUse{name, used})
		}
	}
	return uses
}

// cpuLine tells what each process used in wall on the machine's cores,
// and per request: "quan 13.21 s (66 µs a request), redis-server ...".
// It is empty when nothing was sampled.
func cpuLine(uses []procUse, requests int64, wall time.Duration, cores int) string {
	if len(uses) == 0 || requests <= 0 {
		return ""
	}
	parts := make([]string, len(uses))
	var total time.Duration
	for i, u := range uses {
		total += u.used
		parts[i] = fmt.Sprintf("%s %.2f s (%.0f µs a request)", u.name, u.used.Seconds(), float64(u.used.Microseconds())/float64(requests))
	}
	return fmt.Sprintf("%s; %.2f s of the %.2f s the %d cores had (%.0f µs a request in all)",
		strings.Join(parts, ", "), total.Seconds(), wall.Seconds()*float64(cores), cores, float64(total.Microseconds())/float64(requests))
}
