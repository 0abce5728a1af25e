//! An embassy-time driver on SysTick: one tick per millisecond, the tick count and the timer
//! queue behind a critical section (interrupt masking on a single core).

use core::cell::{Cell, RefCell};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_queue_utils::Queue;
use resilix::time::Instant;

/// The core clock QEMU's mps2-an386 gives SysTick.
const CPU_HZ: u32 = 25_000_000;
/// How often (in ticks) the interrupt makes a call through the shared policies.
const ISR_CALL_EVERY: u64 = 10;

struct SysTickDriver {
    ticks: Mutex<Cell<u64>>,
    queue: Mutex<RefCell<Queue>>,
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    ticks: Mutex::new(Cell::new(0)),
    queue: Mutex::new(RefCell::new(Queue::new())),
});

impl embassy_time_driver::Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| self.ticks.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let mut queue = self.queue.borrow_ref_mut(cs);
            queue.schedule_wake(at, waker);
            // Wakes at once whatever is already due.
            queue.next_expiration(self.ticks.borrow(cs).get());
        })
    }
}

/// Starts SysTick at 1 kHz.
pub(crate) fn start(mut cp: cortex_m::Peripherals) {
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(CPU_HZ / 1_000 - 1);
    cp.SYST.clear_current();
    cp.SYST.enable_interrupt();
    cp.SYST.enable_counter();
}

#[exception]
fn SysTick() {
    let now = critical_section::with(|cs| {
        let ticks = DRIVER.ticks.borrow(cs);
        ticks.set(ticks.get() + 1);
        DRIVER.queue.borrow_ref_mut(cs).next_expiration(ticks.get());
        ticks.get()
    });
    // Outside the critical section: the policies need none.
    if now % ISR_CALL_EVERY == 0 {
        crate::interrupt_call(Instant::from_millis(now));
    }
}
